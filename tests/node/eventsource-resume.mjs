#!/usr/bin/env node
/*
 * eventsource-resume.mjs BASE - a real EventSource client (the npm
 * "eventsource" package, WHATWG HTML 9.2 "Server-sent events") against
 * tokstream's GET /stream, through a TCP proxy on 127.0.0.1 that drops
 * the connection after DROP_AFTER token events: a mid-stream network
 * drop. Checks that
 *   - the client reconnects by itself (the server sent "retry: 1000"),
 *     once, with Last-Event-ID = the id of the last event it got;
 *   - the server resumes: token indices 0..N-1 each exactly once, in
 *     order, and the joined text is POST /generate's for the same request;
 *   - the dropped stream is cancelled and the resumed one is linked to it
 *     in /_debug/generated;
 *   - after [DONE] the client's reconnect (with the "-end" id) gets 204,
 *     readyState becomes CLOSED, it does not reconnect again, and no
 *     second generation happens (total_generated and total_streams).
 * Prints one line per failure and exits 1, or exits 0; 20 s at most.
 */
import net from 'node:net';
import { EventSource } from 'eventsource';

const baseArg = process.argv[2] || process.env.BASE;
const base = URL.canParse?.(baseArg) ? new URL(baseArg) : null;
const PROMPT = 'mobile hand-over';
const N = 30;
const DROP_AFTER = 8;
const RETRY_MS = 1000;           /* the server's retry: line */
const CLOSED_WITHIN_MS = 3000;   /* after [DONE]: 1 retry + the 204 */
const TIMEOUT_MS = 20000;

const failures = [];
const log = [];                  /* timeline, printed on failure */
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
	const body = await res.text();
	try {
		return { status: res.status, json: JSON.parse(body) };
	} catch {
		return { status: res.status, json: null, body };
	}
}

async function totals() {
	const { json } = await getJson('/_debug/generated');
	return json ? `${json.total_generated}/${json.total_streams}` : 'none';
}

/*
 * The proxy: one upstream connection per client connection, bytes passed
 * through both ways. It logs the request line and Last-Event-ID of every
 * request it sees (several may share a keep-alive connection). On the
 * first connection only, it forwards the response up to the end of the
 * DROP_AFTER-th token event (the blank line after its data line), then
 * destroys both sockets. The response is chunked, so the client sees a
 * body cut short: a network error, not a normal end.
 */
const requests = [];
const sockets = new Set();
let connections = 0;
let dropped = false;

const proxy = net.createServer((client) => {
	const conn = ++connections;
	const upstream = net.connect(Number(base.port || 80), base.hostname);
	let reqHead = '';
	let seen = '';               /* response bytes so far, as latin1 */
	let dropping = false;

	sockets.add(client);
	sockets.add(upstream);
	note(`proxy: connection ${conn}`);
	client.on('data', (d) => {
		let i;

		reqHead += d.toString('latin1');
		while ((i = reqHead.indexOf('\r\n\r\n')) >= 0) {
			const head = reqHead.slice(0, i);
			const m = /^last-event-id:[ \t]*(.*?)[ \t]*$/im
			    .exec(head);

			reqHead = reqHead.slice(i + 4);
			requests.push({ conn, line: head.split('\r\n')[0],
			    lastEventId: m ? m[1] : null });
			note(`proxy: request on connection ${conn}, ` +
			    `Last-Event-ID ${m ? m[1] : '(none)'}`);
		}
		upstream.write(d);
	});
	upstream.on('data', (d) => {
		if (dropping)
			return;
		if (conn !== 1 || dropped) {
			client.write(d);
			return;
		}
		seen += d.toString('latin1');
		let pos = -1;
		for (let n = 0; n < DROP_AFTER; n++) {
			pos = seen.indexOf('data: {"token"', pos + 1);
			if (pos < 0)
				break;
		}
		const end = pos < 0 ? -1 : seen.indexOf('\n\n', pos);
		if (end < 0) {
			client.write(d);
			return;
		}
		/* forward up to the end of the event, then drop */
		const cut = end + 2 - (seen.length - d.length);
		dropping = true;
		dropped = true;
		client.write(d.subarray(0, cut), () => {
			note(`proxy: dropping connection ${conn} after ` +
			    `${DROP_AFTER} token events`);
			client.destroy();
			upstream.destroy();
		});
	});
	for (const [a, b] of [[client, upstream], [upstream, client]]) {
		a.on('end', () => b.end());
		a.on('error', () => b.destroy());
		a.on('close', () => {
			sockets.delete(a);
			b.destroy();
		});
	}
});

let es;
let timer;
let finished = false;

function finish() {
	if (finished)
		return;
	finished = true;
	clearTimeout(timer);
	if (es)
		es.close();
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
	console.log(`ok: ${N} tokens, drop after ${DROP_AFTER}, ` +
	    `${requests.length} requests, closed by 204`);
	process.exit(0);
}

async function main() {
	timer = setTimeout(() => {
		failures.push(`timeout: not finished within ${TIMEOUT_MS} ms`);
		finish();
	}, TIMEOUT_MS);

	/* the uninterrupted text, straight to the server */
	const gen = await getJson('/generate', { method: 'POST',
	    headers: { 'Content-Type': 'application/json' },
	    body: JSON.stringify({ prompt: PROMPT, max_tokens: N }) });
	if (!check(gen.status === 200 && typeof gen.json?.text === 'string',
	    `POST /generate: HTTP ${gen.status}`))
		return finish();

	await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
	const url = `http://127.0.0.1:${proxy.address().port}/stream?prompt=` +
	    `${encodeURIComponent(PROMPT)}&max_tokens=${N}`;

	const tokens = [];           /* { id, token } in arrival order */
	const errors = [];           /* error events: { code, state, done } */
	let opens = 0;
	let doneId = null;
	let extraDone = 0;
	let tokensAfterDone = 0;
	let doneTotals = null;
	let closedAt = null;
	let resolveDone;
	const done = new Promise((r) => { resolveDone = r; });

	es = new EventSource(url);
	es.addEventListener('open', () => {
		opens++;
		note(`open ${opens}`);
	});
	es.addEventListener('error', (e) => {
		errors.push({ code: e.code, state: es.readyState,
		    afterDone: doneId !== null });
		note(`error event: code ${e.code}, "${e.message}", ` +
		    `readyState ${es.readyState}`);
	});
	es.addEventListener('message', (e) => {
		if (e.data === '[DONE]') {
			note(`[DONE], id ${e.lastEventId}`);
			if (doneId !== null) {
				extraDone++;
				return;
			}
			doneId = e.lastEventId;
			resolveDone();
			return;
		}
		let obj = null;
		try {
			obj = JSON.parse(e.data);
		} catch {
			/* checked below */
		}
		if (!check(typeof obj?.token === 'string',
		    `an event that is not a token: ${e.data}`))
			return;
		if (doneId !== null) {
			tokensAfterDone++;
			return;
		}
		tokens.push({ id: e.lastEventId, token: obj.token });
	});

	await done;
	const opensBeforeDone = opens;
	const errorsBeforeDone = errors.length;
	const requestsBeforeDone = requests.length;
	doneTotals = await totals();
	note(`totals at [DONE] (generated/streams): ${doneTotals}`);

	/* the client reconnects once more, gets 204 and stops */
	for (let waited = 0; waited <= CLOSED_WITHIN_MS; waited += 25) {
		if (es.readyState === EventSource.CLOSED) {
			closedAt = waited;
			break;
		}
		await sleep(25);
	}
	note(`readyState ${es.readyState} ` +
	    `${closedAt === null ? '' : `${closedAt} ms after [DONE]`}`);
	/* longer than a retry: a client that did not stop would be back */
	await sleep(RETRY_MS + 300);
	const afterTotals = await totals();
	note(`totals after (generated/streams): ${afterTotals}`);

	check(tokensAfterDone === 0 && extraDone === 0, `after [DONE]: ` +
	    `${tokensAfterDone} more token events, ${extraDone} more [DONE]`);

	/* the tokens: indices 0..N-1 once each, in order, no gap */
	const re = /^([1-9][0-9]*)-([0-9a-f]{16})-(0|[1-9][0-9]*)$/;
	const parsed = tokens.map((t) => re.exec(t.id));
	check(parsed.every((m) => m !== null),
	    `token ids not <stream>-<key>-<index>: ${tokens.map((t) =>
		t.id).join(' ')}`);
	const indices = parsed.map((m) => (m ? Number(m[3]) : -1));
	check(indices.length === N && indices.every((v, i) => v === i),
	    `token indices are not 0..${N - 1} once each in order: ` +
	    `${indices.join(',')}`);
	const joined = tokens.map((t) => t.token).join('');
	check(joined === gen.json.text,
	    `joined text differs from /generate's:\n  got  ` +
	    `${JSON.stringify(joined)}\n  want ` +
	    `${JSON.stringify(gen.json.text)}`);

	/* two streams: the dropped one (0..DROP_AFTER-1), the resumed one */
	const streams = parsed.map((m) => (m ? m[1] : null));
	const keys = new Set(parsed.map((m) => (m ? m[2] : null)));
	const first = streams[0];
	const second = streams[DROP_AFTER];
	check(keys.size === 1, `more than one key: ${[...keys].join(' ')}`);
	check(first !== second && streams.every((s, i) =>
	    s === (i < DROP_AFTER ? first : second)),
	    `stream ids are not ${DROP_AFTER} of one then the rest of ` +
	    `another: ${streams.join(',')}`);
	check(doneId === `${second}-${[...keys][0]}-end`,
	    `[DONE] id ${doneId}, want ${second}-<key>-end`);

	/* exactly one reconnect before [DONE], with the right id */
	check(opensBeforeDone === 2, `${opensBeforeDone} opens before ` +
	    '[DONE], want 2 (one reconnect)');
	check(errorsBeforeDone === 1 && errors[0]?.state ===
	    EventSource.CONNECTING, `${errorsBeforeDone} error events ` +
	    'before [DONE], want 1 (the drop, reconnecting)');
	check(requestsBeforeDone === 2, `${requestsBeforeDone} requests ` +
	    'before [DONE], want 2');
	check(requests[0]?.lastEventId === null,
	    `first request had Last-Event-ID ${requests[0]?.lastEventId}`);
	check(requests[1]?.lastEventId === tokens[DROP_AFTER - 1]?.id,
	    `reconnect sent Last-Event-ID ${requests[1]?.lastEventId}, want ` +
	    `${tokens[DROP_AFTER - 1]?.id}`);

	/* after [DONE]: one reconnect with the end id, a 204, CLOSED */
	check(closedAt !== null, `readyState ${es.readyState}, not CLOSED ` +
	    `within ${CLOSED_WITHIN_MS} ms after [DONE]`);
	check(requests.length === 3, `${requests.length} requests in all, ` +
	    'want 3 (stream, resume, the 204)');
	check(requests[2]?.lastEventId === doneId,
	    `the reconnect after [DONE] sent Last-Event-ID ` +
	    `${requests[2]?.lastEventId}, want ${doneId}`);
	/* WHATWG: the normal end announces the reconnect with an error
	 * event (readyState CONNECTING); the 204 fails the connection with
	 * another (this package sets code 204) and closes it */
	const after = errors.slice(errorsBeforeDone);
	check(after.length === 2 &&
	    after[0].state === EventSource.CONNECTING &&
	    after[1].code === 204 && after[1].state === EventSource.CLOSED,
	    'after [DONE] want an error event while reconnecting, then ' +
	    `one with code 204 and readyState CLOSED; got ` +
	    `${JSON.stringify(after)}`);
	check(afterTotals === doneTotals, 'generation after [DONE]: ' +
	    `total_generated/total_streams ${doneTotals} -> ${afterTotals}`);

	/* the server's record: dropped = cancelled, resumed linked to it */
	let g1;
	for (let i = 0; i < 100; i++) {
		g1 = await getJson(`/_debug/generated?id=${first}`);
		if (g1.json?.status !== 'running')
			break;
		await sleep(20);
	}
	check(g1.json?.status === 'cancelled' && g1.json?.generated < N,
	    `dropped stream ${first}: ${JSON.stringify(g1.json)}, want ` +
	    'cancelled');
	const g2 = await getJson(`/_debug/generated?id=${second}`);
	const r = g2.json;
	check(r?.resumed_from === first && r?.resume_index === DROP_AFTER &&
	    r?.resume === 'recomputed' && r?.generated === N - DROP_AFTER &&
	    r?.status === 'done', `resumed stream ${second}: ` +
	    `${JSON.stringify(r)}, want resumed_from ${first}, resume_index ` +
	    `${DROP_AFTER}, generated ${N - DROP_AFTER}, done`);
	finish();
}

if (base === null || !base.host) {
	console.log('usage: eventsource-resume.mjs BASE (e.g. ' +
	    'http://127.0.0.1:8170)');
	process.exit(2);
}
main().catch((err) => {
	failures.push(`exception: ${err?.stack || err}`);
	finish();
});
