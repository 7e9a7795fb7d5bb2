#!/usr/bin/env node
// make-test-gguf.mjs - writes a tiny llama-architecture GGUF v3 file with
// seeded random weights, to test the llama.cpp side of the benchmark
// (run.mjs) before tokstream writes GGUF files of its own. Node's standard
// library only; no dependency.
//
//   node make-test-gguf.mjs OUT.gguf [--type f32|f16|bf16|q8_0|q4_0]
//       [--dim 64] [--layers 2] [--heads 4] [--kv-heads 2] [--hidden 192]
//       [--context 256] [--seed 1] [--reference ID,ID,... [--tokens 32]]
//
// The layout follows the GGUF specification (ggml-org/ggml docs/gguf.md):
// header (magic "GGUF", version 3, tensor count, metadata count), the
// metadata key/values, the tensor infos (name, dims innermost first:
// ne[0] is the row length, ggml type, offset into the data section), then
// the data section aligned to general.alignment (32). Tensor names and
// metadata keys are llama.cpp's for the "llama" architecture
// (src/llama-arch.cpp: token_embd, blk.N.attn_norm, attn_q, attn_k,
// attn_v, attn_output, ffn_norm, ffn_gate = w1, ffn_down = w2, ffn_up =
// w3, output_norm, output; llama.embedding_length and so on).
//
// The tokenizer is a SentencePiece ("llama") vocabulary: <unk>, <s>, </s>,
// the 256 byte tokens <0x00>..<0xFF> (token type 6, BYTE) and some word
// pieces, 300 tokens in all; bos 1, eos 2, unk 0.
//
// Quantized types follow ggml's reference quantizers
// (ggml/src/ggml-quants.c): Q8_0 blocks of 32 are an f16 scale d =
// max|x| / 127 and 32 int8 q = round(x / d); Q4_0 blocks of 32 are an f16
// d = max / -8 (max: the value of largest magnitude, with its sign) and 16
// bytes of 4-bit q = min(15, trunc(x / d + 8.5)), element j in the low
// nibble of byte j and element j + 16 in its high nibble. Norm weights
// stay F32 (as llama.cpp's quantizer keeps them); a matrix whose rows are
// not a multiple of 32 long stays F32 under Q8_0 and Q4_0.
//
// Prints one JSON line: the path, the type, the shape and the bytes of the
// weights (the TPOT floor's numerator: every weight is read once a token).
// With --reference, also reference_ids: the greedy ids after that prompt
// from a plain float forward pass over the weights as stored (decoded from
// the file's bytes), to check an engine's ids against (run.mjs prints
// llama.cpp's; llama.cpp keeps its KV cache in F16, so a near-tie of two
// logits may still part them).
import fs from "node:fs";

const GGUF_TYPE = { u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6,
	bool: 7, str: 8, arr: 9, u64: 10, i64: 11, f64: 12 };
// ggml_type numbers (ggml/include/ggml.h) and block sizes
const GGML = {
	f32: { id: 0, block: 1, bytes: 4 },
	f16: { id: 1, block: 1, bytes: 2 },
	q4_0: { id: 2, block: 32, bytes: 18 },
	q8_0: { id: 8, block: 32, bytes: 34 },
	bf16: { id: 30, block: 1, bytes: 2 },
};
const ALIGN = 32;

function usage(code) {
	(code ? process.stderr : process.stdout).write(
	    "usage: node make-test-gguf.mjs OUT.gguf [--type f32|f16|bf16|" +
	    "q8_0|q4_0]\n  [--dim 64] [--layers 2] [--heads 4] [--kv-heads 2] " +
	    "[--hidden 192] [--context 256] [--seed 1]\n" +
	    "  [--reference ID,ID,... [--tokens 32]]\n");
	process.exit(code);
}

function parseArgs(argv) {
	const o = { out: null, type: "f32", dim: 64, layers: 2, heads: 4,
		kvHeads: 2, hidden: 192, context: 256, seed: 1, reference: null,
		tokens: 32 };
	const num = { "--dim": "dim", "--layers": "layers", "--heads": "heads",
		"--kv-heads": "kvHeads", "--hidden": "hidden",
		"--context": "context", "--seed": "seed", "--tokens": "tokens" };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === "-h" || a === "--help")
			usage(0);
		else if (a === "--type") {
			o.type = String(argv[++i]).toLowerCase();
			if (!(o.type in GGML))
				usage(2);
		} else if (a === "--reference") {
			const s = String(argv[++i] ?? "");
			if (!/^\d+(,\d+)*$/.test(s))
				usage(2);
			o.reference = s.split(",").map(Number);
		} else if (a in num) {
			const v = Number(argv[++i]);
			if (!Number.isInteger(v) || v <= 0 || v > 1 << 20)
				usage(2);
			o[num[a]] = v;
		} else if (o.out === null && !a.startsWith("-"))
			o.out = a;
		else
			usage(2);
	}
	if (o.out === null || o.dim % o.heads || o.heads % o.kvHeads ||
	    (o.dim / o.heads) % 2)
		usage(2);
	return o;
}

// mulberry32: a small seeded PRNG, uniform in [0, 1)
function prng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);

// IEEE half from a float, round to nearest even (as ggml's
// GGML_FP32_TO_FP16 on a CPU without F16C).
function toF16(x) {
	f32buf[0] = x;
	const b = u32buf[0];
	const sign = (b >>> 16) & 0x8000;
	const exp = (b >>> 23) & 0xff;
	let mant = b & 0x7fffff;
	if (exp === 0xff)
		return sign | 0x7c00 | (mant ? 0x200 : 0);
	let e = exp - 127 + 15;
	if (e >= 0x1f)
		return sign | 0x7c00;
	if (e <= 0) {
		if (e < -10)
			return sign;
		mant |= 0x800000;
		const shift = 14 - e;
		let h = mant >>> shift;
		const rem = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
		if (rem > half || (rem === half && (h & 1)))
			h++;
		return sign | h;
	}
	let h = (e << 10) | (mant >>> 13);
	const rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem === 0x1000 && (h & 1)))
		h++;
	return sign | h;
}

function fromF16(h) {
	const s = h & 0x8000 ? -1 : 1, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
	if (e === 0)
		return s * m * 2 ** -24;
	if (e === 0x1f)
		return m ? NaN : s * Infinity;
	return s * (1 + m / 1024) * 2 ** (e - 15);
}

// bfloat16: the top half of the float, round to nearest even
function toBF16(x) {
	f32buf[0] = x;
	const b = u32buf[0];
	if ((b & 0x7fffffff) > 0x7f800000)
		return (b >>> 16) | 64;
	return ((b + (0x7fff + ((b >>> 16) & 1))) >>> 16) & 0xffff;
}

// Encodes the float rows `x` (row length ne0) as ggml type `type`.
function encode(x, ne0, type) {
	const g = GGML[type];
	const n = x.length;
	const out = Buffer.alloc(n / g.block * g.bytes);
	if (type === "f32") {
		for (let i = 0; i < n; i++)
			out.writeFloatLE(x[i], i * 4);
	} else if (type === "f16" || type === "bf16") {
		const conv = type === "f16" ? toF16 : toBF16;
		for (let i = 0; i < n; i++)
			out.writeUInt16LE(conv(x[i]), i * 2);
	} else if (type === "q8_0") {
		for (let b = 0; b < n / 32; b++) {
			let amax = 0;
			for (let j = 0; j < 32; j++)
				amax = Math.max(amax, Math.abs(x[b * 32 + j]));
			const d = amax / 127, id = d ? 1 / d : 0;
			out.writeUInt16LE(toF16(d), b * 34);
			for (let j = 0; j < 32; j++) {
				// roundf: half away from zero
				const v = x[b * 32 + j] * id;
				out.writeInt8(Math.sign(v) * Math.round(Math.abs(v)),
				    b * 34 + 2 + j);
			}
		}
	} else if (type === "q4_0") {
		for (let b = 0; b < n / 32; b++) {
			let amax = 0, max = 0;
			for (let j = 0; j < 32; j++) {
				const v = x[b * 32 + j];
				if (Math.abs(v) > amax) {
					amax = Math.abs(v);
					max = v;
				}
			}
			const d = max / -8, id = d ? 1 / d : 0;
			out.writeUInt16LE(toF16(d), b * 18);
			for (let j = 0; j < 16; j++) {
				const q0 = Math.min(15, Math.trunc(x[b * 32 + j] * id + 8.5));
				const q1 = Math.min(15,
				    Math.trunc(x[b * 32 + 16 + j] * id + 8.5));
				out.writeUInt8(q0 | (q1 << 4), b * 18 + 2 + j);
			}
		}
	}
	return out;
}

// The floats a reader gets back from encode()'s bytes (the weights the
// file really holds, for the reference forward pass).
function decode(buf, n, type) {
	const x = new Float32Array(n);
	if (type === "f32")
		for (let i = 0; i < n; i++)
			x[i] = buf.readFloatLE(i * 4);
	else if (type === "f16")
		for (let i = 0; i < n; i++)
			x[i] = fromF16(buf.readUInt16LE(i * 2));
	else if (type === "bf16")
		for (let i = 0; i < n; i++) {
			u32buf[0] = buf.readUInt16LE(i * 2) << 16;
			x[i] = f32buf[0];
		}
	else if (type === "q8_0")
		for (let b = 0; b < n / 32; b++) {
			const d = fromF16(buf.readUInt16LE(b * 34));
			for (let j = 0; j < 32; j++)
				x[b * 32 + j] = d * buf.readInt8(b * 34 + 2 + j);
		}
	else if (type === "q4_0")
		for (let b = 0; b < n / 32; b++) {
			const d = fromF16(buf.readUInt16LE(b * 18));
			for (let j = 0; j < 16; j++) {
				const q = buf.readUInt8(b * 18 + 2 + j);
				x[b * 32 + j] = d * ((q & 15) - 8);
				x[b * 32 + 16 + j] = d * ((q >> 4) - 8);
			}
		}
	return x;
}

// ---- the reference forward pass --------------------------------------------

// Greedy ids from the weights `w` (name -> Float32Array, as decoded from
// the file), computed the way llama.cpp's "llama" graph does in float:
// RMSNorm x / sqrt(mean(x^2) + eps) times the gain; y = W x with W's row r
// (ne0 long) giving y[r]; RoPE in llama.cpp's normal mode (pairs 2i, 2i+1
// of each head rotated by pos * base^(-2i / head_dim)); causal attention
// scaled by 1 / sqrt(head_dim), query head h on kv head h / (heads /
// kv_heads); SwiGLU FFN down(silu(gate x) * up x); logits = output x,
// argmax (the lowest id among equal maxima). Each generated id is fed
// back, so n ids take prompt + n - 1 positions.
function reference(o, w, nVocab, prompt, n) {
	const hd = o.dim / o.heads, kvDim = hd * o.kvHeads;
	const group = o.heads / o.kvHeads, eps = 1e-5;
	const kc = [], vc = [];
	for (let l = 0; l < o.layers; l++) {
		kc.push([]);
		vc.push([]);
	}
	const matvec = (m, x, rows) => {
		const y = new Float32Array(rows), cols = x.length;
		for (let r = 0; r < rows; r++) {
			let s = 0;
			for (let c = 0; c < cols; c++)
				s += m[r * cols + c] * x[c];
			y[r] = s;
		}
		return y;
	};
	const rmsnorm = (x, g) => {
		let ss = 0;
		for (const v of x)
			ss += v * v;
		const k = 1 / Math.sqrt(ss / x.length + eps);
		return x.map((v, i) => v * k * g[i]);
	};
	const rope = (x, pos, heads) => {
		for (let h = 0; h < heads; h++)
			for (let i = 0; i < hd; i += 2) {
				const th = pos * Math.pow(10000, -i / hd);
				const c = Math.cos(th), s = Math.sin(th);
				const a = x[h * hd + i], b = x[h * hd + i + 1];
				x[h * hd + i] = a * c - b * s;
				x[h * hd + i + 1] = a * s + b * c;
			}
	};
	const step = (tok, pos) => {
		let x = w["token_embd.weight"].slice(tok * o.dim,
		    (tok + 1) * o.dim);
		for (let l = 0; l < o.layers; l++) {
			const p = "blk." + l + ".";
			const xn = rmsnorm(x, w[p + "attn_norm.weight"]);
			const q = matvec(w[p + "attn_q.weight"], xn, o.dim);
			const k = matvec(w[p + "attn_k.weight"], xn, kvDim);
			const v = matvec(w[p + "attn_v.weight"], xn, kvDim);
			rope(q, pos, o.heads);
			rope(k, pos, o.kvHeads);
			kc[l].push(k);
			vc[l].push(v);
			const att = new Float32Array(o.dim);
			for (let h = 0; h < o.heads; h++) {
				const kvh = Math.floor(h / group);
				const sc = kc[l].map((kk) => {
					let s = 0;
					for (let i = 0; i < hd; i++)
						s += q[h * hd + i] * kk[kvh * hd + i];
					return s / Math.sqrt(hd);
				});
				const mx = Math.max(...sc);
				const e = sc.map((s) => Math.exp(s - mx));
				const sum = e.reduce((a, b) => a + b, 0);
				for (let t = 0; t < e.length; t++)
					for (let i = 0; i < hd; i++)
						att[h * hd + i] += e[t] / sum *
						    vc[l][t][kvh * hd + i];
			}
			const ao = matvec(w[p + "attn_output.weight"], att, o.dim);
			x = x.map((v, i) => v + ao[i]);
			const xf = rmsnorm(x, w[p + "ffn_norm.weight"]);
			const g = matvec(w[p + "ffn_gate.weight"], xf, o.hidden);
			const u = matvec(w[p + "ffn_up.weight"], xf, o.hidden);
			const hmid = g.map((a, i) => a / (1 + Math.exp(-a)) * u[i]);
			const d = matvec(w[p + "ffn_down.weight"], hmid, o.dim);
			x = x.map((v, i) => v + d[i]);
		}
		const logits = matvec(w["output.weight"],
		    rmsnorm(x, w["output_norm.weight"]), nVocab);
		let best = 0;
		for (let i = 1; i < nVocab; i++)
			if (logits[i] > logits[best])
				best = i;
		return best;
	};
	let tok = 0;
	prompt.forEach((t, pos) => { tok = step(t, pos); });
	const ids = [tok];
	for (let pos = prompt.length; ids.length < n; pos++) {
		tok = step(tok, pos);
		ids.push(tok);
	}
	return ids;
}

// ---- metadata encoding ----------------------------------------------------

function gstr(s) {
	const b = Buffer.from(s, "utf8");
	const len = Buffer.alloc(8);
	len.writeBigUInt64LE(BigInt(b.length));
	return Buffer.concat([len, b]);
}

function u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v); return b; }
function i32(v) { const b = Buffer.alloc(4); b.writeInt32LE(v); return b; }
function f32(v) { const b = Buffer.alloc(4); b.writeFloatLE(v); return b; }
function u64(v) {
	const b = Buffer.alloc(8);
	b.writeBigUInt64LE(BigInt(v));
	return b;
}

// A metadata value: [type, value]; arrays: ["arr", elemType, values].
function kv(key, type, value, elemType) {
	const parts = [gstr(key), u32(GGUF_TYPE[type])];
	const one = (t, v) => t === "str" ? gstr(v) : t === "u32" ? u32(v) :
	    t === "i32" ? i32(v) : t === "f32" ? f32(v) : t === "u64" ? u64(v) :
	    t === "bool" ? Buffer.from([v ? 1 : 0]) : null;
	if (type === "arr") {
		parts.push(u32(GGUF_TYPE[elemType]), u64(value.length));
		for (const v of value)
			parts.push(one(elemType, v));
	} else
		parts.push(one(type, value));
	return Buffer.concat(parts);
}

// ---- the model --------------------------------------------------------------

// SentencePiece vocabulary: 3 control tokens, 256 bytes, 41 pieces.
function vocabulary() {
	const tokens = ["<unk>", "<s>", "</s>"];
	const types = [2, 3, 3];              // UNKNOWN, CONTROL, CONTROL
	const scores = [0, 0, 0];
	for (let i = 0; i < 256; i++) {
		tokens.push("<0x" + i.toString(16).toUpperCase().padStart(2, "0") +
		    ">");
		types.push(6);                // BYTE
		scores.push(0);
	}
	const words = ["▁", "e", "t", "a", "o", "n", "i", "s", "h", "r", "d",
		"l", "▁t", "▁a", "▁s", "▁w", "he", "▁the", "▁and", "▁to", "▁was",
		"▁a", "in", "▁he", "▁she", "▁it", "▁of", "ed", "ing", "▁big",
		"▁little", "▁girl", "▁dog", "▁happy", "▁play", "▁with", "▁her",
		"▁in", "▁water", "▁went", "."];
	const seen = new Set();
	for (const w of words) {
		if (seen.has(w))
			continue;
		seen.add(w);
		tokens.push(w);
		types.push(1);                // NORMAL
		scores.push(-tokens.length / 10);
	}
	while (tokens.length < 300) {
		tokens.push("▁w" + tokens.length);
		types.push(1);
		scores.push(-tokens.length / 10);
	}
	return { tokens, types, scores };
}

function main() {
	const o = parseArgs(process.argv.slice(2));
	const rnd = prng(o.seed);
	const voc = vocabulary();
	const nVocab = voc.tokens.length;
	const headDim = o.dim / o.heads, kvDim = headDim * o.kvHeads;

	const meta = [
		kv("general.architecture", "str", "llama"),
		kv("general.name", "str", "tokstream test " + o.type),
		kv("general.alignment", "u32", ALIGN),
		kv("llama.context_length", "u32", o.context),
		kv("llama.embedding_length", "u32", o.dim),
		kv("llama.block_count", "u32", o.layers),
		kv("llama.feed_forward_length", "u32", o.hidden),
		kv("llama.attention.head_count", "u32", o.heads),
		kv("llama.attention.head_count_kv", "u32", o.kvHeads),
		kv("llama.rope.dimension_count", "u32", headDim),
		kv("llama.attention.layer_norm_rms_epsilon", "f32", 1e-5),
		kv("llama.rope.freq_base", "f32", 10000),
		kv("llama.vocab_size", "u32", nVocab),
		kv("tokenizer.ggml.model", "str", "llama"),
		kv("tokenizer.ggml.tokens", "arr", voc.tokens, "str"),
		kv("tokenizer.ggml.scores", "arr", voc.scores, "f32"),
		kv("tokenizer.ggml.token_type", "arr", voc.types, "i32"),
		kv("tokenizer.ggml.bos_token_id", "u32", 1),
		kv("tokenizer.ggml.eos_token_id", "u32", 2),
		kv("tokenizer.ggml.unknown_token_id", "u32", 0),
		kv("tokenizer.ggml.add_bos_token", "bool", true),
	];

	// [name, ne0 (row length), ne1 (rows) or 0 for a vector]
	const shapes = [["token_embd.weight", o.dim, nVocab]];
	for (let l = 0; l < o.layers; l++) {
		const p = "blk." + l + ".";
		shapes.push([p + "attn_norm.weight", o.dim, 0],
		    [p + "attn_q.weight", o.dim, o.dim],
		    [p + "attn_k.weight", o.dim, kvDim],
		    [p + "attn_v.weight", o.dim, kvDim],
		    [p + "attn_output.weight", o.dim, o.dim],
		    [p + "ffn_norm.weight", o.dim, 0],
		    [p + "ffn_gate.weight", o.dim, o.hidden],
		    [p + "ffn_down.weight", o.hidden, o.dim],
		    [p + "ffn_up.weight", o.dim, o.hidden]);
	}
	shapes.push(["output_norm.weight", o.dim, 0],
	    ["output.weight", o.dim, nVocab]);

	const infos = [], datas = [], stored = {};
	let offset = 0, weightBytes = 0, params = 0;
	for (const [name, ne0, ne1] of shapes) {
		const n = ne0 * (ne1 || 1);
		const x = new Float32Array(n);
		if (ne1 === 0)
			x.fill(1);            // RMSNorm gains
		else {
			const a = 1 / Math.sqrt(ne0);
			for (let i = 0; i < n; i++)
				x[i] = (rnd() * 2 - 1) * a;
		}
		let type = ne1 === 0 ? "f32" : o.type;
		if (ne0 % GGML[type].block)
			type = "f32";
		const data = encode(x, ne0, type);
		if (o.reference)
			stored[name] = decode(data, n, type);
		const dims = ne1 === 0 ? [ne0] : [ne0, ne1];
		const parts = [gstr(name), u32(dims.length)];
		for (const d of dims)
			parts.push(u64(d));
		parts.push(u32(GGML[type].id), u64(offset));
		infos.push(Buffer.concat(parts));
		datas.push(data);
		const pad = (ALIGN - data.length % ALIGN) % ALIGN;
		if (pad)
			datas.push(Buffer.alloc(pad));
		offset += data.length + pad;
		weightBytes += data.length;
		params += n;
	}

	const header = Buffer.concat([Buffer.from("GGUF", "latin1"), u32(3),
	    u64(shapes.length), u64(meta.length)]);
	const head = Buffer.concat([header, ...meta, ...infos]);
	const pad = Buffer.alloc((ALIGN - head.length % ALIGN) % ALIGN);
	fs.writeFileSync(o.out, Buffer.concat([head, pad, ...datas]));
	process.stdout.write(JSON.stringify({ path: o.out, type: o.type,
		dim: o.dim, layers: o.layers, heads: o.heads,
		kv_heads: o.kvHeads, hidden: o.hidden, context: o.context,
		vocab: nVocab, params, weight_bytes: weightBytes,
		...(o.reference ? { prompt_ids: o.reference,
			reference_ids: reference(o, stored, nVocab, o.reference,
			    o.tokens) } : {}) }) + "\n");
}

// Self-check of the f16 conversion on values with known encodings.
if (toF16(1) !== 0x3c00 || toF16(-2) !== 0xc000 || toF16(65504) !== 0x7bff ||
    fromF16(toF16(0.1)) !== 0.0999755859375 || toF16(2 ** -24) !== 1)
	throw new Error("make-test-gguf: f16 conversion is wrong");

main();
