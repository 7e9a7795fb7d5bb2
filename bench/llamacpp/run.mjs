#!/usr/bin/env node
// run.mjs - the llama.cpp side of tokstream's side-by-side benchmark:
// loads a GGUF model with node-llama-cpp 3.21.1 (its prebuilt CPU library,
// never a build from source), evaluates a prompt given as token ids (no
// tokenizer involved, so both servers see the same tokens), greedily
// decodes N tokens and prints one JSON line of timings.
//
//   node run.mjs MODEL.gguf --prompt-ids 1,45,299 [--tokens 64]
//       [--threads 1] [--batch 1] [--warmup 8] [--flash-attn auto|on|off]
//
// --batch B > 1 decodes B sequences together in one context
// (createContext({sequences: B}), one getSequence() each, the same prompt
// in each): every step queues one token of each sequence
// (LlamaContextSequence.controlledEvaluate) and node-llama-cpp sends them
// to llama_decode as one batch of B tokens.
//
// Output (stdout, one line):
//   ids             the generated ids (sequence 0); ids_all_same: every
//                   sequence generated the same ids (batch > 1)
//   prefill_ms      from submitting the prompt to the first generated
//                   token (all sequences' first tokens at batch > 1)
//   tpot_ms_median, tpot_ms_p90
//                   time per output token after the first: the gaps
//                   between successive tokens (at batch > 1, between the
//                   times every sequence had its k-th token: one decode
//                   step), median and 90th percentile over the run
//   tokens_per_s    output tokens after the first, of all sequences, over
//                   the time from the first token to the last
//   decode_ms_median
//                   median time inside the library's decodeBatch (one
//                   llama_decode) during the decode steps; tpot_ms minus
//                   this is node-llama-cpp's JavaScript and sampling cost
//   tokens_per_decode
//                   [min, max] tokens per llama_decode during the decode
//                   steps: [B, B] when the sequences really were batched
//   threads         --threads; threads_reported: llama_n_threads() of the
//                   context at every decode (a list of the distinct values);
//                   cpu_per_wall: the process's CPU time over wall time in
//                   the measured run (about T when T threads compute on
//                   an idle machine); compute_threads_seen: 1 + the most
//                   OS threads seen during the warm-up above the count at
//                   rest (ggml starts T - 1 helpers for each graph; a
//                   decode too short to be caught may show fewer)
//   llama_cpp_build, cpu_variant, cpu_features, node
//   flash_attention the context's setting: --flash-attn (default auto:
//                   llama.cpp decides)
//   prompt_tokens, tokens, batch; model_bytes (node-llama-cpp's model.size:
//                   the weights); load_ms (library and model load)
// Progress and llama.cpp's log lines go to stderr.
//
// Greedy decoding is pure argmax: temperature 0 (controlledEvaluate's
// generateNext.options) makes node-llama-cpp's sampler chain
// llama_sampler_init_greedy() alone (llama/addon/AddonSampler.cpp: no
// top-k, top-p, min-p or seed sampler when the temperature is 0), and no
// repeatPenalty, dryRepeatPenalty, tokenBias, xtc or grammar is passed, so
// none of them is in the chain.
// An end-of-generation token is fed back like any other and decoding goes
// on, so every run decodes exactly N tokens.
//
// Exit status: 0; 1 on a failure (stderr says which); 2 bad arguments.
import fs from "node:fs";
import path from "node:path";
import process from "node:process";

// Never download or build llama.cpp: the prebuilt library or an error.
process.env.NODE_LLAMA_CPP_SKIP_DOWNLOAD = "true";
process.env.NODE_LLAMA_CPP_GPU = "false";

const USAGE = "usage: node run.mjs MODEL.gguf --prompt-ids ID,ID,... " +
    "[--tokens N] [--threads T] [--batch B] [--warmup W]\n" +
    "  [--flash-attn auto|on|off]\n";

function die(code, msg) {
	process.stderr.write((msg ? "run.mjs: " + msg + "\n" : "") +
	    (code === 2 ? USAGE : ""));
	process.exit(code);
}

function parseArgs(argv) {
	const o = { model: null, ids: null, tokens: 64, threads: 1, batch: 1,
		warmup: 8, flashAttn: "auto" };
	const num = { "--tokens": "tokens", "--threads": "threads",
		"--batch": "batch", "--warmup": "warmup" };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === "-h" || a === "--help") {
			process.stdout.write(USAGE);
			process.exit(0);
		} else if (a === "--prompt-ids") {
			const s = String(argv[++i] ?? "");
			if (!/^\d+(,\d+)*$/.test(s))
				die(2, "--prompt-ids: comma-separated token ids");
			o.ids = s.split(",").map(Number);
		} else if (a === "--flash-attn") {
			const v = argv[++i];
			if (!["auto", "on", "off"].includes(v))
				die(2, "--flash-attn: auto, on or off");
			o.flashAttn = v;
		} else if (a in num) {
			const v = Number(argv[++i]);
			if (!Number.isInteger(v) || v < (a === "--warmup" ? 0 : 1) ||
			    v > 1000000)
				die(2, a + ": a positive integer");
			o[num[a]] = v;
		} else if (o.model === null && !a.startsWith("-"))
			o.model = a;
		else
			die(2, "unknown argument " + a);
	}
	if (o.model === null || o.ids === null)
		die(2);
	if (o.batch > 64)
		die(2, "--batch: at most 64");
	return o;
}

function quantile(v, q) {
	const s = [...v].sort((a, b) => a - b);
	if (s.length === 0)
		return null;
	const pos = (s.length - 1) * q, lo = Math.floor(pos);
	return lo + 1 < s.length ? s[lo] + (s[lo + 1] - s[lo]) * (pos - lo) :
	    s[lo];
}

const round = (x, d = 3) => x == null ? null : Math.round(x * 10 ** d) /
    10 ** d;
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

// The shared objects this process has mapped (/proc/self/maps).
function mappedLibs() {
	try {
		return [...new Set(fs.readFileSync("/proc/self/maps", "utf8")
		    .split("\n").map((l) => l.split(/\s+/)[5])
		    .filter((p) => p && p.endsWith(".so") || /\.so\./.test(p ?? "")))];
	} catch {
		return [];
	}
}

// llama.cpp's build info (common/build-info.cpp: LLAMA_BUILD_NUMBER,
// LLAMA_COMMIT, LLAMA_COMPILER, LLAMA_BUILD_TARGET) read from the dynamic
// symbols of the prebuilt libllama-common.so, an ELF64 little-endian
// shared object: the int is read from its section; the three strings are
// pointers the dynamic linker fills in from R_X86_64_RELATIVE relocations,
// whose addends are the strings' addresses. null when anything is missing.
function buildInfo(file) {
	let b;
	try {
		b = fs.readFileSync(file);
	} catch {
		return null;
	}
	if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1)
		return null;
	const shoff = Number(b.readBigUInt64LE(0x28));
	const shentsize = b.readUInt16LE(0x3a), shnum = b.readUInt16LE(0x3c);
	const secs = [];
	for (let i = 0; i < shnum; i++) {
		const o = shoff + i * shentsize;
		secs.push({ type: b.readUInt32LE(o + 4),
			addr: Number(b.readBigUInt64LE(o + 0x10)),
			off: Number(b.readBigUInt64LE(o + 0x18)),
			size: Number(b.readBigUInt64LE(o + 0x20)),
			link: b.readUInt32LE(o + 0x28),
			entsize: Number(b.readBigUInt64LE(o + 0x38)) });
	}
	const fileOff = (addr) => {
		const s = secs.find((x) => x.addr && addr >= x.addr &&
		    addr < x.addr + x.size && x.type !== 8);
		return s ? s.off + addr - s.addr : -1;
	};
	const cstr = (addr) => {
		const o = fileOff(addr);
		return o < 0 ? null : b.toString("latin1", o, b.indexOf(0, o));
	};
	const dynsym = secs.find((s) => s.type === 11);    // SHT_DYNSYM
	if (!dynsym)
		return null;
	const strtab = secs[dynsym.link];
	const syms = {};
	for (let o = dynsym.off; o < dynsym.off + dynsym.size; o += 24) {
		const nameOff = strtab.off + b.readUInt32LE(o);
		const name = b.toString("latin1", nameOff, b.indexOf(0, nameOff));
		if (/^LLAMA_(BUILD_NUMBER|COMMIT|COMPILER|BUILD_TARGET)$/.test(name))
			syms[name] = Number(b.readBigUInt64LE(o + 8));
	}
	const relative = new Map();
	for (const s of secs.filter((x) => x.type === 4))  // SHT_RELA
		for (let o = s.off; o < s.off + s.size; o += 24)
			if ((b.readBigUInt64LE(o + 8) & 0xffffffffn) === 8n)
				relative.set(Number(b.readBigUInt64LE(o)),
				    Number(b.readBigInt64LE(o + 16)));
	const str = (name) => name in syms && relative.has(syms[name]) ?
	    cstr(relative.get(syms[name])) : null;
	const numOff = "LLAMA_BUILD_NUMBER" in syms ?
	    fileOff(syms.LLAMA_BUILD_NUMBER) : -1;
	return { build: numOff < 0 ? null : b.readInt32LE(numOff),
		commit: str("LLAMA_COMMIT"), compiler: str("LLAMA_COMPILER"),
		target: str("LLAMA_BUILD_TARGET") };
}

async function main() {
	const o = parseArgs(process.argv.slice(2));
	const t0 = nowMs();
	let nlc;
	try {
		nlc = await import("node-llama-cpp");
	} catch (e) {
		die(1, "node-llama-cpp is not installed here (scripts/" +
		    "bench-llamacpp installs it): " + e.message);
	}
	const { getLlama, LlamaLogLevel } = nlc;
	const llama = await getLlama({
		gpu: false,               // CPU only
		build: "never",           // a prebuilt binary or an error
		usePrebuiltBinaries: true,
		skipDownload: true,
		progressLogs: false,
		maxThreads: 0,            // the context's threads, exactly
		logLevel: LlamaLogLevel.warn,
		logger: (level, msg) => process.stderr.write("[llama.cpp " +
		    level + "] " + msg + (msg.endsWith("\n") ? "" : "\n")),
	});
	if (llama.gpu !== false)
		die(1, "the library chose a GPU backend: " + llama.gpu);
	const model = await llama.loadModel({ modelPath: o.model,
		gpuLayers: 0 });
	const vocab = model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length;
	if (vocab != null && o.ids.some((id) => id >= vocab))
		die(1, "a prompt id is not below the vocabulary's " + vocab +
		    " tokens");
	const needed = o.ids.length + o.tokens + 1;
	if (needed > model.trainContextSize)
		die(1, "prompt + tokens = " + needed + " is more than the " +
		    "model's context of " + model.trainContextSize);
	// All the sequences' controlledEvaluate calls of a step queue their
	// token before node-llama-cpp's next event-loop cycle, when it sends
	// what is queued to llama_decode as one batch (batching option
	// "nextCycle", the default); tokens_per_decode shows it happened.
	const context = await model.createContext({
		contextSize: Math.min(model.trainContextSize,
		    Math.max(needed, 256)),
		sequences: o.batch,
		batchSize: Math.max(o.ids.length * o.batch, o.batch),
		threads: o.threads,
		flashAttention: o.flashAttn === "auto" ? "auto" :
		    o.flashAttn === "on",
	});
	const seqs = [];
	for (let i = 0; i < o.batch; i++)
		seqs.push(context.getSequence());

	// Watch every llama_decode: its tokens, time and the context's
	// threads (node-llama-cpp's internal handle of the native context).
	const decodes = [];
	let pending = 0;
	const ctx = context._ctx;
	const watched = ctx && typeof ctx.decodeBatch === "function" &&
	    typeof ctx.addToBatch === "function";
	if (watched) {
		const add = ctx.addToBatch.bind(ctx);
		const decode = ctx.decodeBatch.bind(ctx);
		// the addon's methods are read-only on its prototype: shadow
		// them on the instance
		Object.defineProperty(ctx, "addToBatch", { value:
		    (seqId, first, tokens, logits) => {
			pending += tokens.length;
			return add(seqId, first, tokens, logits);
		} });
		Object.defineProperty(ctx, "decodeBatch", { value: async () => {
			const n = pending, s = nowMs();
			pending = 0;
			const r = await decode();
			decodes.push({ n, ms: nowMs() - s,
				threads: ctx.getThreads() });
			return r;
		} });
	}

	// One run: every sequence evaluates the prompt, then decodes until it
	// has `n` tokens, all in lockstep: each step hands every sequence's
	// last token to controlledEvaluate at once and waits for all of them,
	// so that each decode step is one llama_decode of `batch` tokens.
	// Returns each sequence's ids and the times they arrived.
	const next = { generateNext: { token: true,
		options: { temperature: 0 } } };
	async function generate(n) {
		const res = seqs.map(() => ({ ids: [], times: [] }));
		const start = nowMs();
		let input = seqs.map(() => o.ids.map((id, k) =>
		    k + 1 < o.ids.length ? id : [id, next]));
		for (let k = 0; k < n; k++) {
			const outs = await Promise.all(seqs.map(async (seq, i) => {
				const r = await seq.controlledEvaluate(input[i]);
				res[i].times.push(nowMs());
				return r[input[i].length - 1]?.next?.token;
			}));
			if (outs.some((t) => t == null))
				throw new Error("no token generated at step " + k);
			outs.forEach((t, i) => res[i].ids.push(t));
			input = outs.map((t) => [[t, next]]);
		}
		for (const seq of seqs)
			await seq.clearHistory();
		return { start, res };
	}

	// During the warm-up, count this process's OS threads as often as
	// the event loop allows: ggml starts its T - 1 helper threads for
	// each graph (the first thread is the libuv worker that runs
	// llama_decode), so the most seen above the count at rest, plus one,
	// is the number of threads that really computed. Not during the
	// measured run: the polling costs CPU.
	const taskCount = () => {
		try {
			return fs.readdirSync("/proc/self/task").length;
		} catch {
			return null;
		}
	};
	const rest = taskCount();
	let most = rest, polling = o.warmup > 0 && rest != null;
	const poll = () => {
		if (!polling)
			return;
		most = Math.max(most, taskCount() ?? 0);
		setImmediate(poll);
	};
	poll();
	if (o.warmup > 0)
		await generate(Math.min(o.warmup, o.tokens));
	polling = false;
	decodes.length = 0;
	const cpu0 = process.cpuUsage();
	const { start, res } = await generate(o.tokens);
	const cpu = process.cpuUsage(cpu0), wall = nowMs() - start;

	// step k ends when every sequence has its k-th token
	const stepEnd = [];
	for (let k = 0; k < o.tokens; k++)
		stepEnd.push(Math.max(...res.map((r) => r.times[k])));
	const gaps = [];
	for (let k = 1; k < o.tokens; k++)
		gaps.push(stepEnd[k] - stepEnd[k - 1]);
	const decodeSteps = decodes.slice(1);     // the first: the prompt
	const libs = mappedLibs();
	const common = libs.find((p) => /libllama-common\.so$/.test(p));
	const bi = common ? buildInfo(common) : null;
	const variant = libs.map((p) => /libggml-cpu-([\w-]+)\.so$/.exec(p))
	    .find((m) => m);
	const feats = (llama.systemInfo.match(/(\w+) = 1/g) ?? [])
	    .map((s) => s.split(" ")[0]);
	const rel = llama.llamaCppRelease;

	const out = {
		ids: res[0].ids,
		...(o.batch > 1 ? { ids_all_same: res.every((r) =>
			r.ids.join() === res[0].ids.join()) } : {}),
		prompt_tokens: o.ids.length,
		tokens: o.tokens,
		prefill_ms: round(stepEnd[0] - start),
		tpot_ms_median: round(quantile(gaps, 0.5)),
		tpot_ms_p90: round(quantile(gaps, 0.9)),
		tokens_per_s: gaps.length ? round(o.batch * gaps.length /
		    ((stepEnd[o.tokens - 1] - stepEnd[0]) / 1e3), 1) : null,
		decode_ms_median: watched ? round(quantile(decodeSteps.map(
		    (d) => d.ms), 0.5)) : null,
		tokens_per_decode: watched && decodeSteps.length ?
		    [Math.min(...decodeSteps.map((d) => d.n)),
		    Math.max(...decodeSteps.map((d) => d.n))] : null,
		threads: o.threads,
		threads_reported: watched ? [...new Set(decodes.map(
		    (d) => d.threads))] : [context.currentThreads],
		compute_threads_seen: o.warmup > 0 && rest != null ?
		    1 + most - rest : null,
		cpu_per_wall: round((cpu.user + cpu.system) / 1e3 / wall, 2),
		batch: o.batch,
		llama_cpp_build: rel.repo + " " + rel.release +
		    (bi ? " (build " + bi.build + ", commit " + bi.commit +
		    ", " + bi.compiler + ", " + bi.target + ")" : "") +
		    ", node-llama-cpp " + nodeLlamaCppVersion() + " " +
		    llama.buildType,
		cpu_variant: variant ? variant[1] : null,
		cpu_features: feats,
		flash_attention: context.flashAttention,
		model_bytes: model.size,
		node: process.version,
		load_ms: round(start - t0, 1),
	};
	process.stdout.write(JSON.stringify(out) + "\n");
	await context.dispose();
	await model.dispose();
	await llama.dispose();
}

function nodeLlamaCppVersion() {
	try {
		const here = path.dirname(new URL(import.meta.url).pathname);
		return JSON.parse(fs.readFileSync(path.join(here, "node_modules",
		    "node-llama-cpp", "package.json"), "utf8")).version;
	} catch {
		return "?";
	}
}

main().catch((e) => die(1, e?.stack ?? String(e)));
