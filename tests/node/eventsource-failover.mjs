#!/usr/bin/env node
/*
 * eventsource-failover.mjs BASE NAME=PIDFILE[,PIDFILE...] ... - a real
 * EventSource client (the npm "eventsource" package, WHATWG HTML 9.2)
 * against a tokstream front over several backends (docs/OPERATIONS.md
 * "Several hosts"). After KILL_AFTER token events it kills (SIGKILL) every
 * process named in the pid files of the backend that serves the stream:
 * the backend's name is the first part of the events' ids
 * ("b1-42-<key>-<index>"). Checks that
 *   - the client reconnects by itself (the server's "retry: 1000") with
 *     Last-Event-ID = the id of the last event it got, and the front gives
 *     the resumed stream to another backend (its ids name that one);
 *   - token indices 0..N-1 arrive each exactly once, in order, and the
 *     joined text is the uninterrupted stream's (asked at the front after
 *     the kill, so another backend generates it);
 *   - after [DONE] the reconnect gets 204 and the client closes.
 * Prints one line per failure and exits 1, or prints "killed NAME,
 * resumed on NAME2" and exits 0; 30 s at most.
 */
import fs from 'node:fs';
import { EventSource } from 'eventsource';

const base = process.argv[2];
const pidfiles = Object.fromEntries(process.argv.slice(3).map((a) => {
	const [name, files] = a.split('=');
	return [name, files.split(',')];
}));
const PROMPT = 'failover across hosts';
const N = 40;
const KILL_AFTER = 10;
const TIMEOUT_MS = 30000;

const failures = [];
const log = [];
const t0 = Date.now();
const note = (what) => log.push(`${String(Date.now() - t0).padStart(6)} ms  ${what}`);
const check = (ok, what) => { if (!ok) failures.push(what); return ok; };

const query = `prompt=${encodeURIComponent(PROMPT)}&max_tokens=${N}&tpot_ms=50`;
const tokens = [];               /* [index, text, instance] */
let killed = null;
let opens = 0;
let ended = false;

function instanceOf(id) {
	const parts = (id || '').split('-');
	return parts.length === 4 ? parts[0] : null;
}

function killBackend(name) {
	for (const f of pidfiles[name] || []) {
		for (const line of fs.readFileSync(f, 'utf8').split('\n')) {
			const pid = Number(line.trim());
			if (pid > 0) {
				try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
			}
		}
	}
	note(`killed backend ${name}`);
}

const es = new EventSource(`${base}/stream?${query}`);
const done = new Promise((resolve) => {
	const timer = setTimeout(() => { failures.push('timed out'); resolve(); }, TIMEOUT_MS);
	es.onopen = () => { opens++; note(`open ${opens}`); };
	es.onmessage = (ev) => {
		if (ev.data === '[DONE]') {
			ended = true;
			note(`[DONE] id ${ev.lastEventId}`);
			return;
		}
		const idx = Number(ev.lastEventId.split('-').pop());
		tokens.push([idx, JSON.parse(ev.data).token, instanceOf(ev.lastEventId)]);
		if (tokens.length === KILL_AFTER && killed === null) {
			killed = instanceOf(ev.lastEventId);
			if (check(killed !== null && pidfiles[killed],
			    `event id ${ev.lastEventId} names no known backend`))
				killBackend(killed);
		}
	};
	es.onerror = () => {
		note(`error, readyState ${es.readyState}`);
		if (ended && es.readyState === EventSource.CLOSED) {
			clearTimeout(timer);
			resolve();
		}
	};
});
await done;
es.close();

const idxs = tokens.map((t) => t[0]);
check(JSON.stringify(idxs) === JSON.stringify([...Array(N).keys()]),
    `token indices are not 0..${N - 1} once each: ${idxs.join(',')}`);
const after = [...new Set(tokens.slice(KILL_AFTER).map((t) => t[2]))];
check(after.length === 1 && after[0] !== killed,
    `the resumed events came from ${after.join(',')}, killed ${killed}`);
check(opens === 2, `opened ${opens} times, want 2 (one reconnect)`);
/* the uninterrupted stream, from a live backend */
const whole = await (await fetch(`${base}/stream?${query.replace('tpot_ms=50', 'tpot_ms=0')}`)).text();
const want = whole.split('\n').filter((l) => l.startsWith('data: {"token"'))
    .map((l) => JSON.parse(l.slice(6)).token).join('');
check(tokens.map((t) => t[1]).join('') === want,
    'the joined text is not the uninterrupted stream\'s');
if (failures.length) {
	for (const f of failures) console.log(`FAIL: ${f}`);
	for (const l of log) console.log(l);
	process.exit(1);
}
console.log(`killed ${killed}, resumed on ${after[0]}`);
