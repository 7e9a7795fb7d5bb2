#!/usr/bin/env node
/*
 * trace-compare.mjs REC I REP - compares request I of trace REC (a
 * recording) with every request of trace REP (replays of it), both
 * tokstream traces, version 1 (src/trace/trace.h), and prints one JSON
 * object:
 *   bytes_equal   every replay's body bytes (its chunks, in order) are
 *                 the recording's
 *   status_equal  so are their statuses
 *   n             recorded chunks (the first has no ITL), runs: replays
 *   p99_abs_delta_ms  p99 over recorded chunks k >= 1 of
 *                 |ITL_rep(k) - ITL_rec(k)|: ITL_rec(k) the gap between
 *                 the recording's chunks k-1 and k, ITL_rep(k) the gap
 *                 between the replay's arrivals of the same byte offsets
 *                 (a chunk's last byte), so reads the path between split
 *                 or joined otherwise still compare. With several runs,
 *                 each offset's arrival is the median of the runs' (each
 *                 run's less its median lateness against the recording):
 *                 a late wake-up of some thread on a shared machine
 *                 seldom hits the same chunk in two runs
 *   max_abs_delta_ms  the largest of those
 *   run_p99_ms    each run's own p99, alone
 *   rec_total_ms, rep_total_ms  the last chunk's time (rep: the first
 *                 run's)
 * tests/integration/replay.bats checks replays with it. Node's modules
 * only.
 */
import fs from 'node:fs';

const [recPath, iArg, repPath] = process.argv.slice(2);

function requests(path) {
	return fs.readFileSync(path, 'utf8').split('\n')
	    .filter((l) => l.length > 0).map((l) => JSON.parse(l))
	    .filter((o) => o.type === 'request');
}

const bytes = (c) => typeof c === 'string' ? Buffer.from(c, 'utf8') :
    Buffer.from(c.b64, 'base64');
const body = (r) => Buffer.concat(r.chunks.map(([, c]) => bytes(c)));

/* [[end offset, time], ...] of a request's chunks */
function ends(r) {
	let off = 0;
	return r.chunks.map(([t, c]) => {
		off += bytes(c).length;
		return [off, t];
	});
}

/* a replay's time when it had received `off` bytes */
const at = (e, off) => (e.find(([o]) => o >= off) || [0, NaN])[1];

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor((s.length - 1) / 2)];
}

function p99(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return s.length ? s[Math.min(s.length - 1,
	    Math.ceil(0.99 * s.length) - 1)] : null;
}

/* |ITL_rep - ITL_rec| in ms over chunks 1.., arrival(off) giving the
 * replay's time of a byte offset */
function deltas(re, arrival) {
	const d = [];
	for (let k = 1; k < re.length; k++)
		d.push(Math.abs((arrival(re[k][0]) - arrival(re[k - 1][0])) -
		    (re[k][1] - re[k - 1][1])) / 1000);
	return d;
}

const rec = requests(recPath)[Number(iArg)];
const reps = requests(repPath);
const re = ends(rec);
const pes = reps.map(ends);
/* each run's arrivals less its own usual lateness (the median over its
 * chunks of arrival - recorded time: how long its request took to reach
 * the server), so the runs' medians compare like with like */
const shift = pes.map((e) => median(re.map(([off, t]) => at(e, off) - t)));
const all = deltas(re, (off) => median(pes.map((e, r) => at(e, off) -
    shift[r])));
const last = (e) => e.length ? e[e.length - 1][1] / 1000 : null;
console.log(JSON.stringify({
	bytes_equal: reps.length > 0 &&
	    reps.every((r) => body(r).equals(body(rec))),
	status_equal: reps.every((r) => r.status === rec.status),
	n: re.length,
	runs: reps.length,
	p99_abs_delta_ms: p99(all),
	max_abs_delta_ms: all.length ? Math.max(...all) : null,
	run_p99_ms: pes.map((e) => p99(deltas(re, (off) => at(e, off)))),
	rec_total_ms: last(re),
	rep_total_ms: pes.length ? last(pes[0]) : null,
}));
