#!/usr/bin/env node
/*
 * eventsource-done.mjs BASE - a real EventSource client (the npm
 * "eventsource" package, WHATWG HTML 9.2) that reads GET /stream and
 * stops at [DONE] by closing itself, the way a page should use tokstream
 * (docs/API.md "Browser demo"). Between the client and the server is a TCP
 * proxy on 127.0.0.1 that counts the HTTP requests that pass. Checks that
 *   - the tokens arrive in order and join to POST /generate's text;
 *   - after es.close() at [DONE], readyState is CLOSED, no error event
 *     comes, and for longer than two reconnection delays (the server's
 *     "retry: 1000") no second request reaches the proxy, and the
 *     server's totals (total_streams, total_generated) grew by exactly
 *     this one stream;
 *   - control: a client that does not close at [DONE] is seen by the
 *     same proxy coming back once (Last-Event-ID = the "-end" id), and
 *     gets the 204 that stops it. That reconnect generates nothing, so
 *     the totals alone could not tell; the request count can.
 * Prints one line per failure and exits 1, or exits 0; 20 s at most.
 */
import net from 'node:net';
import { EventSource } from 'eventsource';

const baseArg = process.argv[2] || process.env.BASE;
const base = URL.canParse?.(baseArg) ? new URL(baseArg) : null;
const PROMPT = 'stop at done';
const N = 12;
const RETRY_MS = 1000;           /* the server's retry: line */
const QUIET_MS = 2 * RETRY_MS + 500;
const TIMEOUT_MS = 20000;

const failures = [];
const log = [];
const t0 = Date.now();

function note(what) {
	log.push(`${String(Date.now() - t0).padStart(6)} ms  ${what}`);
}

function check(ok, what) {
	if (!ok)
		failures.push(what);
	return ok;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function getJson(path, init) {
	const res = await fetch(new URL(path, base), init);
	return { status: res.status, json: await res.json() };
}

async function totals() {
	const { json } = await getJson('/_debug/generated');
	return { generated: json.total_generated, streams: json.total_streams };
}

/* The proxy: bytes passed through both ways; every request head seen on
 * the way in is counted (with its Last-Event-ID). */
const requests = [];
const sockets = new Set();
const proxy = net.createServer((client) => {
	const upstream = net.connect(Number(base.port || 80), base.hostname);
	let head = '';

	sockets.add(client);
	sockets.add(upstream);
	client.on('data', (d) => {
		let i;

		head += d.toString('latin1');
		while ((i = head.indexOf('\r\n\r\n')) >= 0) {
			const h = head.slice(0, i);
			const m = /^last-event-id:[ \t]*(.*?)[ \t]*$/im.exec(h);

			head = head.slice(i + 4);
			requests.push({ line: h.split('\r\n')[0],
			    lastEventId: m ? m[1] : null });
			note(`proxy: ${h.split('\r\n')[0]} Last-Event-ID ` +
			    `${m ? m[1] : '(none)'}`);
		}
		upstream.write(d);
	});
	upstream.on('data', (d) => client.write(d));
	for (const [a, b] of [[client, upstream], [upstream, client]]) {
		a.on('end', () => b.end());
		a.on('error', () => b.destroy());
		a.on('close', () => {
			sockets.delete(a);
			b.destroy();
		});
	}
});

/*
 * Reads one stream with an EventSource; closeAtDone: close it in the
 * [DONE] handler. Resolves at [DONE] with what was read.
 */
function readStream(url, closeAtDone) {
	const r = { tokens: [], errors: [], opens: 0, doneId: null,
	    after: 0, es: null };

	return new Promise((resolve) => {
		const es = new EventSource(url);

		r.es = es;
		es.addEventListener('open', () => {
			r.opens++;
			note(`open ${r.opens}`);
		});
		es.addEventListener('error', (e) => {
			r.errors.push({ code: e.code, state: es.readyState,
			    afterDone: r.doneId !== null });
			note(`error event: code ${e.code}, readyState ` +
			    `${es.readyState}`);
		});
		es.addEventListener('message', (e) => {
			if (r.doneId !== null) {
				r.after++;
				return;
			}
			if (e.data === '[DONE]') {
				r.doneId = e.lastEventId;
				note(`[DONE] id ${e.lastEventId}`);
				if (closeAtDone)
					es.close();
				resolve(r);
				return;
			}
			try {
				r.tokens.push(JSON.parse(e.data).token);
			} catch {
				r.tokens.push(undefined);
			}
		});
	});
}

let timer;

function finish() {
	clearTimeout(timer);
	proxy.close();
	for (const s of sockets)
		s.destroy();
	if (failures.length > 0) {
		for (const f of failures)
			console.log(`FAIL: ${f}`);
		console.log('timeline:');
		for (const l of log)
			console.log(`  ${l}`);
		process.exit(1);
	}
	console.log(`ok: ${N} tokens, closed at [DONE], 1 request; the ` +
	    `control client came back once and got 204`);
	process.exit(0);
}

async function main() {
	timer = setTimeout(() => {
		failures.push(`timeout: not finished within ${TIMEOUT_MS} ms`);
		finish();
	}, TIMEOUT_MS);
	const gen = await getJson('/generate', { method: 'POST',
	    headers: { 'Content-Type': 'application/json' },
	    body: JSON.stringify({ prompt: PROMPT, max_tokens: N }) });
	await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
	const url = `http://127.0.0.1:${proxy.address().port}/stream?prompt=` +
	    `${encodeURIComponent(PROMPT)}&max_tokens=${N}`;

	/* the client that closes at [DONE] */
	const before = await totals();
	const r = await readStream(url, true);
	check(r.es.readyState === EventSource.CLOSED,
	    `readyState ${r.es.readyState} after close() at [DONE]`);
	check(r.tokens.length === N && r.tokens.join('') === gen.json.text,
	    `tokens ${JSON.stringify(r.tokens)} do not join to /generate's ` +
	    JSON.stringify(gen.json.text));
	check(/-end$/.test(r.doneId ?? ''), `[DONE] id ${r.doneId}`);
	await sleep(QUIET_MS);
	const after = await totals();
	check(requests.length === 1, `${requests.length} requests reached ` +
	    `the server within ${QUIET_MS} ms, want 1: ` +
	    JSON.stringify(requests));
	check(r.errors.length === 0 && r.after === 0 && r.opens === 1,
	    `after close(): ${r.errors.length} error events, ${r.after} ` +
	    `messages, ${r.opens} opens`);
	check(after.streams === before.streams + 1 &&
	    after.generated === before.generated + N,
	    `totals ${JSON.stringify(before)} -> ${JSON.stringify(after)}, ` +
	    `want one more stream and ${N} more tokens`);

	/* control: the same client without close() comes back */
	requests.length = 0;
	const c = await readStream(url, false);
	for (let w = 0; w < QUIET_MS &&
	    c.es.readyState !== EventSource.CLOSED; w += 25)
		await sleep(25);
	const after2 = await totals();
	check(requests.length === 2 && requests[1].lastEventId === c.doneId,
	    `control: ${requests.length} requests ` +
	    `${JSON.stringify(requests)}, want 2, the second with ` +
	    `Last-Event-ID ${c.doneId}`);
	check(c.es.readyState === EventSource.CLOSED &&
	    c.errors.some((e) => e.code === 204), `control: readyState ` +
	    `${c.es.readyState}, errors ${JSON.stringify(c.errors)}, want ` +
	    'CLOSED by a 204');
	check(after2.streams === after.streams + 1, `control: totals ` +
	    `${JSON.stringify(after)} -> ${JSON.stringify(after2)}`);
	c.es.close();
	finish();
}

if (base === null || !base.host) {
	console.log('usage: eventsource-done.mjs BASE (e.g. ' +
	    'http://127.0.0.1:8170)');
	process.exit(2);
}
main().catch((err) => {
	failures.push(`exception: ${err?.stack || err}`);
	finish();
});
