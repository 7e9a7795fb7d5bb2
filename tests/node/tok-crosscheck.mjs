// tok-crosscheck.mjs - tokstream's tokenizers against Hugging Face's
// tokenizers.js (@huggingface/tokenizers, an independent implementation
// of the Rust tokenizers library's tokenizer.json semantics).
//
//   node tok-crosscheck.mjs [--gguf PRE] DRIVER TOKENIZER.json CORPUS.jsonl
//
// DRIVER is tests/tok_encode: it prints, per corpus line, the ids of
// tokstream's encode (BOS as the file's post_processor says) and the text
// its stream decode gives back; with --gguf PRE, of the same vocabulary
// built as from GGUF metadata with tokenizer.ggml.pre PRE. Checks, for every line:
//   - the ids equal tokenizers.js's encode(text) (add_special_tokens);
//   - for lines with no special or added token's text (those decode to
//     "" in a stream): the stream decode equals tokenizers.js's decode,
//     and gives the text back (a U+2581 comes back a space in the
//     SentencePiece style; not checked for Metaspace "first", which loses
//     a leading space in tokenizers too).
// Prints one line per difference and "ok N lines" at the end; exit 1 on
// any difference.
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { Tokenizer } from "@huggingface/tokenizers";

const argv = process.argv.slice(2);
const gguf = argv[0] === "--gguf" ? argv.splice(0, 2) : [];
const [driver, tokfile, corpusFile] = argv;
if (!corpusFile) {
  console.error("usage: node tok-crosscheck.mjs [--gguf PRE] DRIVER TOKENIZER.json CORPUS.jsonl");
  process.exit(2);
}
const json = JSON.parse(readFileSync(tokfile, "utf8"));
const tok = new Tokenizer(json, {});
const lines = readFileSync(corpusFile, "utf8").split("\n")
  .filter((l) => l.length > 0).map((l) => JSON.parse(l));
const ours = execFileSync(driver, [...gguf, tokfile, corpusFile], {
  encoding: "utf8", maxBuffer: 1 << 26,
}).split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));

const addedTexts = json.added_tokens.map((a) => a.content);
// SentencePiece-style: a "\u2581" in the text is a space once encoded
const spm = JSON.stringify([json.normalizer, json.pre_tokenizer])
  .includes("\u2581");
const meta = JSON.stringify(json.pre_tokenizer).includes("Metaspace");
let bad = 0;
if (ours.length !== lines.length) {
  console.log(`driver printed ${ours.length} lines for ${lines.length}`);
  bad++;
}
lines.forEach((text, i) => {
  const want = tok.encode(text).ids;
  const got = ours[i] ? ours[i].ids : null;
  if (JSON.stringify(want) !== JSON.stringify(got)) {
    bad++;
    console.log(`line ${i + 1} ${JSON.stringify(text)}: ids differ\n` +
      `  tokenizers.js ${JSON.stringify(want)}\n` +
      `  tokstream     ${JSON.stringify(got)}`);
  }
  if (!ours[i] || addedTexts.some((a) => text.includes(a))) return;
  // decoding: what tokenizers.js's decode gives for the same ids, and
  // the text itself (a Metaspace "first" tokenizer loses a leading space,
  // in both)
  const back = want.length === 0 ? "" : tok.decode(want,
    { skip_special_tokens: true, clean_up_tokenization_spaces: false });
  if (ours[i].text !== back) {
    bad++;
    console.log(`line ${i + 1} ${JSON.stringify(text)}: decodes to ` +
      `${JSON.stringify(ours[i].text)}, tokenizers.js ` +
      JSON.stringify(back));
  }
  if (!meta && ours[i].text !== (spm ? text.replaceAll("\u2581", " ") : text)) {
    bad++;
    console.log(`line ${i + 1} ${JSON.stringify(text)}: decodes to ` +
      JSON.stringify(ours[i].text));
  }
});
if (bad > 0) {
  console.log(`${bad} differences in ${tokfile}`);
  process.exit(1);
}
console.log(`ok ${lines.length} lines`);
