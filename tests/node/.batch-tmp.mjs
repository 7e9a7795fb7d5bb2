import { readFileSync, readdirSync, writeFileSync, mkdirSync } from "node:fs";
import { Template } from "@huggingface/jinja";
const [dir, ctxPath, outDir] = process.argv.slice(2);
const now = 1721952000 * 1000;
const RealDate = Date;
globalThis.Date = class extends RealDate { constructor(...a) { super(...(a.length ? a : [now])); } static now() { return now; } };
const ctx = JSON.parse(readFileSync(ctxPath, "utf8"));
mkdirSync(outDir, { recursive: true });
for (const f of readdirSync(dir)) {
  const text = readFileSync(dir + "/" + f, "utf8");
  let out = null;
  try { out = new Template(text).render(structuredClone(ctx)); } catch (e) { out = null; }
  if (out !== null) writeFileSync(outDir + "/" + f, out);
}
