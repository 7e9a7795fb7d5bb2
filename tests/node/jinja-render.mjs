// tests/node/jinja-render.mjs - renders a chat template with a JSON
// context through @huggingface/jinja (the renderer of Transformers.js'
// apply_chat_template), for tests/integration/templates.bats, which
// compares the bytes with tests/jinja_render (src/jinja).
//
//   node jinja-render.mjs TEMPLATE CONTEXT.json [NOW]
//
// Writes the rendered text to stdout, exactly; on error one line to
// stderr ("render: template raised: MSG" for an error the template
// raised, as src/jinja words it) and exit 1. NOW (seconds since the
// epoch, default 1721952000) is the clock strftime_now() reads; run with
// TZ=UTC, as src/jinja formats dates in UTC.
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const [tplPath, ctxPath, nowArg] = process.argv.slice(2);
const now = Number(nowArg ?? 1721952000) * 1000;
const RealDate = Date;
// strftime_now() reads `new Date()`: a fixed clock
globalThis.Date = class extends RealDate {
	constructor(...args) {
		super(...(args.length ? args : [now]));
	}
	static now() {
		return now;
	}
};

const text = readFileSync(tplPath, "utf8");
const ctx = JSON.parse(readFileSync(ctxPath, "utf8"));
let template;
try {
	template = new Template(text);
} catch (e) {
	process.stderr.write(`parse: ${e.message}\n`);
	process.exit(1);
}
let out;
try {
	out = template.render(ctx);
} catch (e) {
	// raise_exception(msg) throws new Error(msg); templates.bats compares
	// this line only for the templates' raise_exception cases
	process.stderr.write(`render: template raised: ${e.message}\n`);
	process.exit(1);
}
process.stdout.write(out);
