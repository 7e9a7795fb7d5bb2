#!/usr/bin/env node
/*
 * ollama-client.mjs BASE CASE - tokstream's Ollama API (docs/API.md
 * "Ollama API") driven by Ollama's own JavaScript client, the npm
 * package "ollama" (pinned in package.json; its types in
 * node_modules/ollama/dist/browser.d.ts: ChatResponse, GenerateResponse,
 * ListResponse, ShowResponse, ModelResponse, VersionResponse). Cases:
 *
 *   chat      /api/chat streamed and not, same seed: every streamed part
 *             has model, created_at (RFC 3339 with nanoseconds), message
 *             {role, content}, done; the last is done with done_reason and
 *             the metrics; the streamed text equals the answer's
 *   generate  /api/generate streamed and not, the same checks on response
 *   list      ollama.list(): the served model as "NAME:latest"
 *   show      ollama.show(): template, details, model_info, capabilities
 *   version   ollama.version()
 *   ps        ollama.ps(): the model with expires_at and context_length
 *   format    /api/chat with format = a JSON Schema, streamed and not: the
 *             output parses and ajv validates it against the schema
 *   tools     /api/chat with tools: message.tool_calls, arguments an
 *             object valid against the tool's parameters (ajv)
 *   abort     a stream read for 5 parts, then stream.abort(): prints
 *             "id=N parts=5" (N its X-Request-Id) for the caller to look
 *             the stream up in /_debug/generated
 *   abort-think  the same with think: true, aborted after 5 parts that
 *             carry message.thinking (the model still thinking)
 *   error     a stream that fails after 3 tokens (error_after 3): the
 *             client throws the server's {"error"} line as an Error
 *   notfound  an unknown model: a ResponseError with status 404 and
 *             Ollama's message
 *
 * Prints "ok: CASE ..." and exits 0, or "FAIL: ..." and exits 1. Node 18
 * (Debian 12) or later: the global fetch.
 */
import { Ollama } from 'ollama';
import Ajv from 'ajv';

const [base, which] = process.argv.slice(2);
let lastId = null;
// the client takes a fetch of our own: it lets the test read the
// X-Request-Id of the stream it aborts
const ollama = new Ollama({
	host: base,
	fetch: async (url, init) => {
		const r = await fetch(url, init);
		lastId = r.headers.get('x-request-id');
		return r;
	},
});
const MODEL = 'tokstream-sim';
const RFC3339NANO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;
const METRICS = ['total_duration', 'load_duration', 'prompt_eval_count',
	'prompt_eval_duration', 'eval_count', 'eval_duration'];

function fail(msg) {
	console.log(`FAIL: ${msg}`);
	process.exit(1);
}

function check(cond, msg) {
	if (!cond)
		fail(msg);
}

// The fields every object of a response has (ChatResponse or
// GenerateResponse); kind 'chat' or 'generate'.
function checkPart(p, kind, what) {
	const s = JSON.stringify(p);
	check(p.model === MODEL, `${what}: model in ${s}`);
	check(typeof p.created_at === 'string' &&
	    RFC3339NANO.test(p.created_at), `${what}: created_at in ${s}`);
	check(typeof p.done === 'boolean', `${what}: done in ${s}`);
	if (kind === 'chat')
		check(p.message && p.message.role === 'assistant' &&
		    typeof p.message.content === 'string',
		    `${what}: message in ${s}`);
	else
		check(typeof p.response === 'string',
		    `${what}: response in ${s}`);
}

function checkFinal(p, kind, what) {
	const s = JSON.stringify(p);
	checkPart(p, kind, what);
	check(p.done === true, `${what}: not done: ${s}`);
	check(['stop', 'length'].includes(p.done_reason),
	    `${what}: done_reason in ${s}`);
	for (const k of METRICS)
		check(Number.isInteger(p[k]) && p[k] >= 0,
		    `${what}: ${k} in ${s}`);
	check(p.eval_count > 0 && p.prompt_eval_count > 0,
	    `${what}: counts in ${s}`);
	// nanoseconds: the parts add up to no more than the whole
	check(p.load_duration + p.prompt_eval_duration + p.eval_duration <=
	    p.total_duration, `${what}: durations exceed the total in ${s}`);
}

// Reads a stream: every part checked, the text joined; returns
// {text, parts, last}.
async function readStream(stream, kind, what) {
	let text = '', n = 0, last = null;
	for await (const p of stream) {
		check(last === null || !last.done, `${what}: a part after done`);
		checkPart(p, kind, `${what} part ${n}`);
		text += kind === 'chat' ? p.message.content : p.response;
		last = p;
		n++;
	}
	check(last !== null, `${what}: no part`);
	checkFinal(last, kind, `${what} last part`);
	return { text, parts: n, last };
}

const msgs = [{ role: 'user', content: 'tell me about the sea' }];
const opts = { seed: 7, num_predict: 24, temperature: 0.8 };

async function caseChat() {
	const s = await readStream(await ollama.chat({ model: MODEL,
	    messages: msgs, options: opts, stream: true }), 'chat', 'chat');
	const a = await ollama.chat({ model: MODEL, messages: msgs,
	    options: opts, stream: false });
	checkFinal(a, 'chat', 'chat answer');
	check(s.text.length > 0, 'chat: empty text');
	check(a.message.content === s.text,
	    `chat: streamed ${JSON.stringify(s.text)} != ` +
	    `${JSON.stringify(a.message.content)}`);
	check(s.parts >= 2, `chat: ${s.parts} parts`);
	check(a.eval_count === s.last.eval_count, 'chat: eval_count differs');
	console.log(`ok: chat ${s.parts} parts, ${s.last.eval_count} tokens, ` +
	    `${JSON.stringify(s.text)}`);
}

async function caseGenerate() {
	const req = { model: MODEL, prompt: 'tell me about the sea',
	    system: 'be brief', options: opts };
	const s = await readStream(await ollama.generate({ ...req,
	    stream: true }), 'generate', 'generate');
	const a = await ollama.generate({ ...req, stream: false });
	checkFinal(a, 'generate', 'generate answer');
	check(a.response === s.text && s.text.length > 0,
	    `generate: streamed ${JSON.stringify(s.text)} != ` +
	    `${JSON.stringify(a.response)}`);
	console.log(`ok: generate ${s.parts} parts, ` +
	    `${JSON.stringify(s.text)}`);
}

async function caseList() {
	const r = await ollama.list();
	check(Array.isArray(r.models) && r.models.length === 1,
	    `list: ${JSON.stringify(r)}`);
	const m = r.models[0];
	check(m.name === `${MODEL}:latest` && m.model === m.name,
	    `list: name ${JSON.stringify(m)}`);
	check(/^[0-9a-f]{64}$/.test(m.digest), `list: digest ${m.digest}`);
	check(RFC3339NANO.test(m.modified_at), `list: modified_at`);
	check(m.details && Array.isArray(m.details.families),
	    `list: details ${JSON.stringify(m.details)}`);
	console.log(`ok: list ${m.name}`);
}

async function caseShow() {
	const r = await ollama.show({ model: MODEL });
	check(typeof r.template === 'string' &&
	    r.template.includes('<|assistant|>'), `show: template`);
	check(r.details && typeof r.details.family === 'string',
	    `show: details`);
	check(r.model_info && r.model_info['general.architecture'] ===
	    r.details.family, `show: model_info ${JSON.stringify(r)}`);
	check(Array.isArray(r.capabilities) &&
	    r.capabilities.includes('completion'), `show: capabilities`);
	console.log(`ok: show ${r.details.family}`);
}

async function caseVersion() {
	const r = await ollama.version();
	check(typeof r.version === 'string' && /^\d+\.\d+/.test(r.version),
	    `version: ${JSON.stringify(r)}`);
	console.log(`ok: version ${r.version}`);
}

async function casePs() {
	const r = await ollama.ps();
	check(Array.isArray(r.models) && r.models.length === 1,
	    `ps: ${JSON.stringify(r)}`);
	const m = r.models[0];
	check(m.name === `${MODEL}:latest`, `ps: name`);
	check(RFC3339NANO.test(m.expires_at), `ps: expires_at`);
	check(Number.isInteger(m.context_length) && m.context_length > 0,
	    `ps: context_length`);
	console.log(`ok: ps ${m.name}`);
}

const schema = {
	type: 'object',
	properties: {
		city: { type: 'string', minLength: 1 },
		days: { type: 'integer', minimum: 1, maximum: 7 },
		units: { enum: ['celsius', 'fahrenheit'] },
		tags: { type: 'array', items: { type: 'string' },
		    minItems: 1, maxItems: 3 },
	},
	required: ['city', 'days', 'units', 'tags'],
	additionalProperties: false,
};

async function caseFormat() {
	const ajv = new Ajv();
	const valid = ajv.compile(schema);
	const req = { model: MODEL, messages: msgs, format: schema,
	    options: { seed: 3, num_predict: 400 } };
	const s = await readStream(await ollama.chat({ ...req, stream: true }),
	    'chat', 'format');
	const a = await ollama.chat({ ...req, stream: false });
	check(a.message.content === s.text, 'format: streamed != answer');
	let v;
	try {
		v = JSON.parse(s.text);
	} catch (e) {
		fail(`format: not JSON: ${s.text}`);
	}
	check(valid(v), `format: ${s.text}: ` +
	    JSON.stringify(valid.errors));
	console.log(`ok: format ${s.text}`);
}

async function caseTools() {
	const ajv = new Ajv();
	const params = { type: 'object', properties: {
		location: { type: 'string' },
		format: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
		required: ['location', 'format'] };
	const valid = ajv.compile(params);
	const tools = [{ type: 'function', function: {
		name: 'get_current_weather',
		description: 'Get the current weather for a location',
		parameters: params } }];
	for (const stream of [false, true]) {
		let r;
		if (stream) {
			const s = await ollama.chat({ model: MODEL,
			    messages: msgs, tools, stream: true });
			for await (const p of s)
				if (p.message.tool_calls)
					r = p;
		} else {
			r = await ollama.chat({ model: MODEL, messages: msgs,
			    tools, stream: false });
		}
		const calls = r && r.message.tool_calls;
		check(Array.isArray(calls) && calls.length === 1,
		    `tools (stream ${stream}): ${JSON.stringify(r)}`);
		const f = calls[0].function;
		check(f.name === 'get_current_weather', `tools: name ${f.name}`);
		check(typeof f.arguments === 'object' && valid(f.arguments),
		    `tools: arguments ${JSON.stringify(f.arguments)} ` +
		    JSON.stringify(valid.errors));
	}
	// the tool's result ends the loop: an answer in text
	const r = await ollama.chat({ model: MODEL, tools, stream: false,
	    messages: [...msgs, { role: 'assistant', content: '',
	    tool_calls: [{ function: { name: 'get_current_weather',
	    arguments: { location: 'Paris', format: 'celsius' } } }] },
	    { role: 'tool', content: '11 degrees', tool_name:
	    'get_current_weather' }] });
	check(!r.message.tool_calls && r.message.content.length > 0,
	    `tools: after the result ${JSON.stringify(r)}`);
	console.log('ok: tools');
}

async function caseAbort(think = false) {
	const s = await ollama.chat({ model: MODEL, messages: msgs,
	    stream: true, think, options: { seed: 11, num_predict: 2000 } });
	const id = lastId;
	let n = 0;
	try {
		for await (const p of s) {
			checkPart(p, 'chat', `abort part ${n}`);
			check(!p.done, 'abort: the stream ended early');
			if (think)
				check(p.message.thinking?.length > 0 &&
				    !p.message.content,
				    `abort-think: part ${n} is not thinking`);
			if (++n === 5)
				s.abort();
		}
	} catch (e) {
		check(e.name === 'AbortError', `abort: ${e}`);
	}
	check(n === 5, `abort: ${n} parts`);
	console.log(`id=${id} parts=${n}`);
}

async function caseError() {
	let n = 0;
	try {
		const s = await ollama.generate({ model: MODEL, prompt: 'x',
		    stream: true, error_after: 3, options: { seed: 1,
		    num_predict: 50 } });
		for await (const p of s) {
			checkPart(p, 'generate', `error part ${n}`);
			n++;
		}
	} catch (e) {
		check(/injected error after 3 tokens/.test(e.message),
		    `error: ${e.message}`);
		check(n === 3, `error: ${n} parts before the error`);
		console.log(`ok: error after ${n} parts: ${e.message}`);
		return;
	}
	fail('error: no error thrown');
}

async function caseNotFound() {
	try {
		await ollama.chat({ model: 'llama9', messages: msgs });
	} catch (e) {
		check(e.status_code === 404, `notfound: status ${e.status_code}`);
		check(e.error ===
		    'model "llama9" not found, try pulling it first',
		    `notfound: ${e.error}`);
		console.log(`ok: notfound ${e.error}`);
		return;
	}
	fail('notfound: no error');
}

const cases = { chat: caseChat, generate: caseGenerate, list: caseList,
	show: caseShow, version: caseVersion, ps: casePs, format: caseFormat,
	tools: caseTools, abort: () => caseAbort(false),
	'abort-think': () => caseAbort(true), error: caseError,
	notfound: caseNotFound };
if (!cases[which])
	fail(`usage: ollama-client.mjs BASE ${Object.keys(cases).join('|')}`);
cases[which]().catch((e) => fail(`${which}: ${e.stack || e}`));
