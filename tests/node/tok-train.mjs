// tok-train.mjs - makes the test tokenizers of tests/data/tokenizers/ (the
// project's own, trained here on a small built-in corpus; no model's
// files are copied):
//   llama3-bpe.json  byte-level BPE with Llama 3's pre-tokenizer (Split
//                    regex + ByteLevel without regex), ignore_merges, merges
//                    as "a b", <|begin_of_text|> ... added special tokens,
//                    a BOS template, a vocabulary word no merge reaches
//   gpt2-bpe.json    byte-level BPE with ByteLevel(use_regex) (GPT-2's
//                    regex), merges as ["a", "b"] pairs, <|endoftext|>
//   qwen2-bpe.json   byte-level BPE with Qwen 2's Split regex, no BOS
//   smollm-bpe.json  byte-level BPE with SmolLM's Digits(individual) and
//                    ByteLevel(use_regex)
//   spm-bpe.json     SentencePiece-style BPE as Llama 2's tokenizer.json:
//                    <unk> <s> </s>, 256 <0xHH> byte tokens, Prepend and
//                    Replace normalizers, byte_fallback, a <s> template
//   spm-meta.json    the same vocabulary with the newer Metaspace
//                    pre-tokenizer (prepend_scheme "first", split false)
// Usage: node tests/node/tok-train.mjs OUTDIR   (deterministic: the same
// files every run; the committed ones were made so).
import { writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const corpus = `The quick brown fox jumps over the lazy dog. It's a test of the
tokenizer, and the tokenizer's merges are learned from this text alone.
We'll see what they've learned: words, numbers like 1234 and 2026, and
punctuation!!! Does it work? Yes, it does; it's working well.
def main():
    print("hello world")
    return 0
In the beginning the model reads the prompt, then it streams the tokens
one by one: prefill first, then each decode step. Latency matters: TTFT,
ITL and the end-to-end time. I'M SHOUTING, YOU'RE LISTENING, THEY'D KNOW.
Spaces   and tabs\tand new lines
are all part of the text.  Café, naïve, résumé, and über are words too.
server streaming tokens tokens tokens model model model prompt prompt
the the the and and and of of of to to to in in in is is is
`;

// GPT-2's bytes_to_unicode
function byteChars() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const map = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (bs.includes(b)) map[b] = String.fromCodePoint(b);
    else map[b] = String.fromCodePoint(256 + n++);
  }
  return map;
}
const BYTE = byteChars();
const toByteLevel = (s) =>
  Array.from(new TextEncoder().encode(s), (b) => BYTE[b]).join("");

// Counts words (arrays of symbols), merges the most frequent pair each
// round (ties: the smaller pair string), returns the merges in order.
function train(words, nMerges) {
  const merges = [];
  for (let round = 0; round < nMerges; round++) {
    const counts = new Map();
    for (const [syms, c] of words) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = syms[i] + "\u0000" + syms[i + 1];
        counts.set(k, (counts.get(k) || 0) + c);
      }
    }
    let best = null, bestC = 0;
    for (const [k, c] of counts) {
      if (c > bestC || (c === bestC && best !== null && k < best)) {
        best = k;
        bestC = c;
      }
    }
    if (best === null) break;
    const [a, b] = best.split("\u0000");
    merges.push([a, b]);
    for (const w of words) {
      const syms = w[0], out = [];
      for (let i = 0; i < syms.length; i++) {
        if (i + 1 < syms.length && syms[i] === a && syms[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(syms[i]);
      }
      w[0] = out;
    }
  }
  return merges;
}

function countWords(pieces) {
  const m = new Map();
  for (const p of pieces) m.set(p, (m.get(p) || 0) + 1);
  return [...m].map(([w, c]) => [Array.from(w), c]);
}

function byteLevel(regex, nMerges, extraWords) {
  const pieces = (corpus.match(regex) || []).map(toByteLevel);
  const merges = train(countWords(pieces), nMerges);
  const vocab = {};
  let id = 0;
  for (let b = 0; b < 256; b++) vocab[BYTE[b]] = id++;
  for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = id++;
  for (const w of extraWords) {
    const s = toByteLevel(w);
    if (!(s in vocab)) vocab[s] = id++;
  }
  return { vocab, merges, next: id };
}

const added = (id, content, special) => ({
  id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special,
});

function llama3() {
  const pat = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  // the same for JavaScript (no inline (?i:) in Node 18), training only
  const js = /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;
  const { vocab, merges, next } = byteLevel(js, 400,
    [" unmergeable", " tokstream"]);
  const specials = ["<|begin_of_text|>", "<|end_of_text|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"];
  const addedTokens = specials.map((s, i) => added(next + i, s, true));
  addedTokens.push(added(next + specials.length, "<tool>", false));
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: { type: "Sequence", pretokenizers: [
      { type: "Split", pattern: { Regex: pat }, behavior: "Isolated",
        invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true,
        use_regex: false },
    ] },
    post_processor: { type: "Sequence", processors: [
      { type: "ByteLevel", add_prefix_space: true, trim_offsets: false,
        use_regex: true },
      { type: "TemplateProcessing",
        single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } },
          { Sequence: { id: "A", type_id: 0 } }],
        pair: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } },
          { Sequence: { id: "A", type_id: 0 } },
          { SpecialToken: { id: "<|begin_of_text|>", type_id: 1 } },
          { Sequence: { id: "B", type_id: 1 } }],
        special_tokens: { "<|begin_of_text|>": { id: "<|begin_of_text|>",
          ids: [next], tokens: ["<|begin_of_text|>"] } } },
    ] },
    decoder: { type: "ByteLevel", add_prefix_space: true,
      trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null,
      continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: true,
      vocab, merges: merges.map(([a, b]) => a + " " + b) },
  };
}

// Qwen 2's pre-tokenizer: Llama 3's regex with single digits
function qwen2() {
  const pat = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const js = /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;
  const { vocab, merges, next } = byteLevel(js, 300, []);
  const specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: specials.map((s, i) => added(next + i, s, true)),
    normalizer: null,
    pre_tokenizer: { type: "Sequence", pretokenizers: [
      { type: "Split", pattern: { Regex: pat }, behavior: "Isolated",
        invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: false,
        use_regex: false },
    ] },
    post_processor: { type: "ByteLevel", add_prefix_space: false,
      trim_offsets: false, use_regex: false },
    decoder: { type: "ByteLevel", add_prefix_space: false,
      trim_offsets: false, use_regex: false },
    model: { type: "BPE", dropout: null, unk_token: null,
      continuing_subword_prefix: "", end_of_word_suffix: "",
      fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab, merges: merges.map(([a, b]) => a + " " + b) },
  };
}

// SmolLM's: single digits (Digits), then ByteLevel with GPT-2's regex
function smollm() {
  const js = /\p{N}|'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
  const { vocab, merges, next } = byteLevel(js, 300, []);
  const specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: specials.map((s, i) => added(next + i, s, true)),
    normalizer: null,
    pre_tokenizer: { type: "Sequence", pretokenizers: [
      { type: "Digits", individual_digits: true },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true,
        use_regex: true },
    ] },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true,
      trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null,
      continuing_subword_prefix: "", end_of_word_suffix: "",
      fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab, merges: merges.map(([a, b]) => a + " " + b) },
  };
}

function gpt2() {
  const js = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
  const { vocab, merges, next } = byteLevel(js, 300, []);
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [added(next, "<|endoftext|>", true)],
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false,
      trim_offsets: true, use_regex: true },
    post_processor: { type: "ByteLevel", add_prefix_space: true,
      trim_offsets: false, use_regex: true },
    decoder: { type: "ByteLevel", add_prefix_space: true,
      trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null,
      continuing_subword_prefix: "", end_of_word_suffix: "",
      fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab, merges },
  };
}

function spmVocab() {
  const WS = "\u2581";
  const lines = corpus.split("\n").filter((l) => l.length > 0);
  const words = [];
  for (const l of lines) {
    const s = WS + l.replaceAll(" ", WS);
    // words start at each U+2581 (training only)
    for (const w of s.split(new RegExp(`(?=${WS})`, "u"))) words.push(w);
  }
  const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  let id = 3;
  for (let b = 0; b < 256; b++)
    vocab["<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">"] = id++;
  // the corpus's characters, most frequent first; a few left out so that
  // byte fallback has work even on this text
  const freq = new Map();
  for (const w of words) for (const c of w) freq.set(c, (freq.get(c) || 0) + 1);
  const chars = [...freq].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([c]) => c).filter((c) => !"ïü\t".includes(c));
  for (const c of chars) vocab[c] = id++;
  const counted = countWords(words).filter(([syms]) =>
    syms.every((c) => c in vocab));
  const merges = train(counted, 300);
  for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = id++;
  return { vocab, merges };
}

function spm(meta) {
  const { vocab, merges } = spmVocab();
  const WS = "\u2581";
  const tmpl = { type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "<s>", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } }],
    pair: [{ SpecialToken: { id: "<s>", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } },
      { SpecialToken: { id: "<s>", type_id: 1 } },
      { Sequence: { id: "B", type_id: 1 } }],
    special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } } };
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [added(0, "<unk>", true), added(1, "<s>", true),
      added(2, "</s>", true)],
    normalizer: meta ? null : { type: "Sequence", normalizers: [
      { type: "Prepend", prepend: WS },
      { type: "Replace", pattern: { String: " " }, content: WS },
    ] },
    pre_tokenizer: meta ? { type: "Metaspace", replacement: WS,
      prepend_scheme: "first", split: false } : null,
    post_processor: tmpl,
    decoder: meta ? { type: "Sequence", decoders: [
      { type: "Metaspace", replacement: WS, prepend_scheme: "first",
        split: false },
      { type: "ByteFallback" }, { type: "Fuse" }] } :
      { type: "Sequence", decoders: [
        { type: "Replace", pattern: { String: WS }, content: " " },
        { type: "ByteFallback" }, { type: "Fuse" },
        { type: "Strip", content: " ", start: 1, stop: 0 }] },
    model: { type: "BPE", dropout: null, unk_token: "<unk>",
      continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: true, ignore_merges: false,
      vocab, merges: merges.map(([a, b]) => a + " " + b) },
  };
}

const out = process.argv[2];
if (!out) {
  console.error("usage: node tok-train.mjs OUTDIR");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const files = { "llama3-bpe.json": llama3(), "gpt2-bpe.json": gpt2(),
  "qwen2-bpe.json": qwen2(), "smollm-bpe.json": smollm(),
  "spm-bpe.json": spm(false), "spm-meta.json": spm(true) };
for (const [name, obj] of Object.entries(files))
  writeFileSync(join(out, name), JSON.stringify(obj, null, 1) + "\n");
