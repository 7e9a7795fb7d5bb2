#!/usr/bin/env node
// table.mjs - the table of scripts/bench-llamacpp: reads run.mjs's JSON
// lines (one per run) and prints a Markdown table with the median of the
// runs of each (threads, batch), next to the TPOT floor when the read
// bandwidth is given.
//
//   node table.mjs RUNS.jsonl [--bw T=GB/s ...]
//
// floor ms = model bytes (all the weights, read once per decode step,
// whatever the batch) / the read bandwidth with T threads.
import fs from "node:fs";

const args = process.argv.slice(2);
const bw = {};
let file = null;
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--bw") {
		const m = /^(\d+)=([\d.]+)$/.exec(args[++i] ?? "");
		if (!m) {
			process.stderr.write("table.mjs: --bw T=GB/s\n");
			process.exit(2);
		}
		bw[m[1]] = Number(m[2]);
	} else
		file = args[i];
}
if (file === null) {
	process.stderr.write("usage: node table.mjs RUNS.jsonl [--bw T=GB/s]\n");
	process.exit(2);
}

const runs = fs.readFileSync(file, "utf8").split("\n").filter((l) => l)
    .map((l) => JSON.parse(l));
if (runs.length === 0) {
	process.stderr.write("table.mjs: no runs in " + file + "\n");
	process.exit(1);
}
const median = (v) => {
	const s = v.filter((x) => x != null).sort((a, b) => a - b);
	if (s.length === 0)
		return null;
	return s.length % 2 ? s[(s.length - 1) / 2] :
	    (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (x, d = 2) => x == null ? "-" : x.toFixed(d);

const groups = new Map();
for (const r of runs) {
	const key = r.threads + "/" + r.batch;
	if (!groups.has(key))
		groups.set(key, []);
	groups.get(key).push(r);
}
const r0 = runs[0];
const allIds = new Set(runs.map((r) => r.ids.join(",")));
console.log("llama.cpp: " + r0.llama_cpp_build);
console.log("CPU backend: " + (r0.cpu_variant ?? "?") + " (" +
    r0.cpu_features.join(" ") + "); flash attention: " +
    r0.flash_attention + "; node " + r0.node);
console.log("model: " + (r0.model_bytes / 1048576).toFixed(2) +
    " MiB of weights; prompt " + r0.prompt_tokens + " tokens; " + r0.tokens +
    " generated tokens per sequence; median of " +
    Math.min(...[...groups.values()].map((g) => g.length)) + " runs each");
console.log("greedy ids: " + (allIds.size === 1 ?
    "the same in every run and sequence" :
    allIds.size + " different sequences of ids across the runs") + "\n");
console.log("| threads | batch | prefill ms | TPOT median ms | TPOT p90 ms " +
    "| output tok/s | llama_decode ms | tokens/decode | threads: llama.cpp / OS " +
    "| CPU/wall | floor ms | TPOT/floor |");
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const [, g] of [...groups].sort((a, b) => a[1][0].threads -
    b[1][0].threads || a[1][0].batch - b[1][0].batch)) {
	const m = (k) => median(g.map((r) => r[k]));
	const t = g[0].threads, b = g[0].batch;
	const floor = bw[t] ? r0.model_bytes / (bw[t] * 1e9) * 1e3 : null;
	const tpot = m("tpot_ms_median");
	const tpd = g.map((r) => r.tokens_per_decode).filter((x) => x);
	const tpdLo = Math.min(...tpd.map((x) => x[0]));
	const tpdHi = Math.max(...tpd.map((x) => x[1]));
	const seen = [...new Set(g.flatMap((r) => r.threads_reported))];
	const os = [...new Set(g.map((r) => r.compute_threads_seen ?? "?"))];
	console.log("| " + [t, b, fmt(m("prefill_ms")), fmt(tpot, 3),
		fmt(m("tpot_ms_p90"), 3), fmt(m("tokens_per_s"), 1),
		fmt(m("decode_ms_median"), 3),
		tpd.length ? (tpdLo === tpdHi ? tpdLo : tpdLo + "-" + tpdHi) : "-",
		seen.join(",") + " / " + os.join(","), fmt(m("cpu_per_wall")), fmt(floor, 4),
		floor && tpot ? fmt(tpot / floor, 1) : "-"].join(" | ") + " |");
}
