#!/usr/bin/env node
/*
 * trace-fidelity.mjs REC REP - how closely a replayed run (REP, a trace
 * of the same workload sent to `tokstream-fcgi --replay REC`) follows the
 * recording (REC), both tokstream traces, version 1 (docs/TOKBENCH.md).
 * Requests are paired by their body (the k-th replay of a body with the
 * k-th recording of it). For every pair, the ITLs are the gaps between
 * token events (tokbench's count of the SSE events with tokens); prints
 * one JSON object:
 *   pairs, itls        requests paired, ITLs compared
 *   bytes_equal        pairs whose body bytes (chunks joined) are equal
 *   rec, rep           the ITL distribution of each: p50, p99, max (ms)
 *   delta              |ITL_rep - ITL_rec| over the paired ITLs, the
 *                      same percentiles (ms)
 *   ttft_delta         |TTFT_rep - TTFT_rec| (the first token event), ms
 * scripts/bench-replay prints it. Node's modules only.
 */
import fs from 'node:fs';

const [recPath, repPath] = process.argv.slice(2);
if (!recPath || !repPath) {
	console.error('usage: trace-fidelity.mjs REC REP');
	process.exit(2);
}

function load(path) {
	const lines = fs.readFileSync(path, 'utf8').split('\n').filter(Boolean);
	const reqs = lines.map((l) => JSON.parse(l)).filter((o) => o.type === 'request' && !o.warmup);
	return reqs;
}

function bodyOf(r) {
	return r.body !== undefined ? r.body : 'b64:' + r.body_b64;
}

function bytesOf(r) {
	return Buffer.concat((r.chunks || []).map(([, b]) => typeof b === 'string' ?
	    Buffer.from(b, 'utf8') : Buffer.from(b.b64, 'base64')));
}

function pct(xs, p) {
	if (xs.length === 0)
		return null;
	const s = [...xs].sort((a, b) => a - b);
	/* nearest rank, as tokbench reports */
	const k = Math.max(1, Math.ceil(p / 100 * s.length));
	return Math.round(s[k - 1] * 1000) / 1000;
}

function dist(xs) {
	return { p50: pct(xs, 50), p99: pct(xs, 99), max: pct(xs, 100) };
}

function itls(r) {
	const t = (r.token_events || []).map(([us]) => us / 1000);
	const out = [];
	for (let i = 1; i < t.length; i++)
		out.push(t[i] - t[i - 1]);
	return out;
}

const rec = load(recPath), rep = load(repPath);
const byBody = new Map();
for (const r of rec) {
	const k = bodyOf(r);
	if (!byBody.has(k))
		byBody.set(k, []);
	byBody.get(k).push(r);
}
const used = new Map();
let pairs = 0, equal = 0;
const recItl = [], repItl = [], delta = [], ttft = [];
for (const p of rep) {
	const k = bodyOf(p);
	const list = byBody.get(k);
	if (!list)
		continue;
	const n = used.get(k) || 0;
	used.set(k, n + 1);
	const r = list[n % list.length];
	pairs++;
	if (bytesOf(r).equals(bytesOf(p)))
		equal++;
	const a = itls(r), b = itls(p);
	recItl.push(...a);
	repItl.push(...b);
	for (let i = 0; i < Math.min(a.length, b.length); i++)
		delta.push(Math.abs(a[i] - b[i]));
	if (r.token_events?.length && p.token_events?.length)
		ttft.push(Math.abs(r.token_events[0][0] - p.token_events[0][0]) / 1000);
}
console.log(JSON.stringify({
	pairs, itls: delta.length, bytes_equal: equal,
	rec: dist(recItl), rep: dist(repItl), delta: dist(delta),
	ttft_delta: dist(ttft),
}));
