#!/usr/bin/env node
/*
 * anthropic-sdk.mjs BASE KEY - Anthropic's official client for
 * JavaScript (npm @anthropic-ai/sdk) against tokstream's Messages API
 * through lighttpd, a server started with --api-key KEY and
 * --allow-failure-header. What an application written for Claude sees:
 *   - messages.create without and with stream: the streamed text deltas
 *     joined equal the non-streamed text; events in Anthropic's order;
 *   - messages.stream() and finalMessage() give the same message;
 *   - stop_reason for each cause: end_turn, max_tokens, stop_sequence
 *     (with stop_sequence set and the text cut before it), tool_use;
 *   - a tool_use forced by tool_choice {type:"tool"} whose input
 *     validates against the tool's input_schema (ajv), streamed as
 *     input_json_delta;
 *   - thinking: a thinking block with a signature before the text block,
 *     streamed as thinking_delta then signature_delta before text_delta;
 *   - countTokens equals the same request's usage (input_tokens plus the
 *     cache's reads and writes; a fresh prompt's input_tokens alone);
 *   - the key as x-api-key (the SDK's way); the SDK's error classes:
 *     BadRequestError, AuthenticationError, NotFoundError, RateLimitError
 *     and InternalServerError (529 overloaded_error), with Anthropic's
 *     error types; an error event after the 200 thrown by the iterator;
 *   - aborting a stream after 5 text deltas, or after 5 thinking deltas
 *     while the model still thinks, leaves at most 6 tokens
 *     generated (/_debug/generated);
 *   - every Message, streamed event, token count and error body validates
 *     (ajv) against anthropic-schemas.json, tokstream's transcription of
 *     the SDK's types, which rejects broken controls (a Message without
 *     usage, a text block with a field the types do not declare, an
 *     unknown delta type).
 * Prints one line per failure and exits 1, or a summary and exits 0.
 */
import Anthropic from '@anthropic-ai/sdk';
import { VERSION } from '@anthropic-ai/sdk/version';
import Ajv from 'ajv';
import fs from 'node:fs';

const BASE = process.argv[2] || process.env.BASE;
const KEY = process.argv[3] || 'sekret';
const MODEL = 'tokstream-sim';
const failures = [];
let checks = 0;

function check(ok, what) {
	checks++;
	if (!ok)
		failures.push(what);
	return ok;
}

const show = (v) => JSON.stringify(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const user = (text) => [{ role: 'user', content: text }];
const textOf = (m) => m.content.filter((b) => b.type === 'text')
    .map((b) => b.text).join('');

const client = new Anthropic({ baseURL: BASE, apiKey: KEY, maxRetries: 0 });

/* The SDK's types as JSON Schema (anthropic-schemas.json): each object
 * the server sent is validated against its definition. */
const schemas = JSON.parse(fs.readFileSync(new URL('./anthropic-schemas.json',
    import.meta.url), 'utf8'));
const ajv = new Ajv({ allErrors: true });
ajv.addSchema(schemas);
const validator = (name) => ajv.getSchema(`${schemas.$id}#/definitions/${name}`);
const V = { Message: validator('Message'),
	Event: validator('RawMessageStreamEvent'),
	Count: validator('MessageTokensCount'),
	Error: validator('ErrorResponse') };
let validated = 0;

function valid(kind, obj, what) {
	validated++;
	return check(V[kind](obj), `schema ${kind} (${what}): ${show(obj)} ` +
	    show(V[kind].errors));
}

async function debugWhenDone(id) {
	for (let i = 0; i < 250; i++) {
		const d = await (await fetch(`${BASE}/_debug/generated?id=${id}`))
		    .json();
		if (d.status !== 'running')
			return d;
		await sleep(20);
	}
	return null;
}

/* Every event of a stream, in order. */
async function events(params) {
	const s = await client.messages.create({ ...params, stream: true });
	const out = [];
	for await (const ev of s) {
		valid('Event', ev, ev.type);
		out.push(ev);
	}
	return out;
}

/* The blocks a list of events builds, each {type, text, signature}, and
 * whether the events came in Anthropic's order. */
function replay(evs) {
	const blocks = [];
	let ok = evs.length >= 3 && evs[0].type === 'message_start' &&
	    evs.at(-1).type === 'message_stop' &&
	    evs.at(-2).type === 'message_delta';
	let open = -1;
	for (const ev of evs.slice(1, -2)) {
		if (ev.type === 'content_block_start') {
			ok = ok && open === -1 && ev.index === blocks.length;
			open = ev.index;
			blocks.push({ type: ev.content_block.type, text: '',
			    signature: '', deltas: [] });
		} else if (ev.type === 'content_block_delta') {
			const b = blocks[open];
			const d = ev.delta;
			ok = ok && ev.index === open;
			if (!b)
				return { blocks, ok: false };
			b.deltas.push(d.type);
			if (d.type === 'text_delta')
				b.text += d.text;
			else if (d.type === 'thinking_delta')
				b.text += d.thinking;
			else if (d.type === 'input_json_delta')
				b.text += d.partial_json;
			else if (d.type === 'signature_delta')
				b.signature += d.signature;
		} else if (ev.type === 'content_block_stop') {
			ok = ok && ev.index === open;
			open = -1;
		} else {
			ok = false;
		}
	}
	return { blocks, ok: ok && open === -1 };
}

/* A create that validates its Message. */
async function create(params, c = client) {
	const m = await c.messages.create(params);
	valid('Message', m, 'messages.create');
	return m;
}

async function main() {
	/* 0. the schemas reject broken controls */
	const good = { id: 'msg_1', type: 'message', role: 'assistant',
	    model: MODEL, content: [{ type: 'text', text: 'x', citations: null }],
	    stop_reason: 'end_turn', stop_sequence: null, stop_details: null,
	    container: null, diagnostics: null, usage: { input_tokens: 1,
	    output_tokens: 1, cache_creation_input_tokens: 0,
	    cache_read_input_tokens: 0, cache_creation: null,
	    output_tokens_details: null, server_tool_use: null,
	    service_tier: 'standard', inference_geo: null, speed: null } };
	check(V.Message(good), `control Message rejected: ${show(V.Message.errors)}`);
	const { usage, ...noUsage } = good;
	check(!V.Message(noUsage), 'a Message without usage accepted');
	check(!V.Message({ ...good, content: [{ type: 'text', text: 'x',
	    citations: null, extra: 1 }] }), 'a text block with an extra ' +
	    'field accepted');
	check(!V.Event({ type: 'content_block_delta', index: 0,
	    delta: { type: 'bogus_delta', text: 'x' } }),
	    'an unknown delta type accepted');
	check(!V.Error({ type: 'error', error: { type: 'api_error' },
	    request_id: null }), 'an error without a message accepted');

	/* 1. stream and not: the same text; the SDK's accumulator too */
	const p = { model: MODEL, max_tokens: 40, messages: user('hello there') };
	const m = await create(p);
	check(m.type === 'message' && m.role === 'assistant' &&
	    m.id.startsWith('msg_') && m.model === MODEL &&
	    m.content.length === 1 && m.content[0].type === 'text' &&
	    m.stop_reason === 'max_tokens' && m.stop_sequence === null &&
	    m.usage.output_tokens === 40 && m.usage.input_tokens +
	    m.usage.cache_read_input_tokens > 0, `create: ${show(m)}`);
	const evs = await events(p);
	const r = replay(evs);
	check(r.ok, `event order: ${show(evs.map((e) => e.type))}`);
	check(r.blocks.length === 1 && r.blocks[0].text === textOf(m),
	    `streamed text ${show(r.blocks)} != ${show(textOf(m))}`);
	check(evs.at(-2).delta.stop_reason === 'max_tokens' &&
	    evs.at(-2).usage.output_tokens === 40, `message_delta: ` +
	    show(evs.at(-2)));
	const fin = await client.messages.stream(p).finalMessage();
	/* parsed_output is the SDK's own (structured output helpers) */
	const { parsed_output: parsed, ...finWire } = fin;
	valid('Message', finWire, 'finalMessage');
	check(textOf(fin) === textOf(m) && fin.stop_reason === 'max_tokens' &&
	    fin.usage.output_tokens === 40 && fin.usage.input_tokens ===
	    m.usage.input_tokens + m.usage.cache_read_input_tokens -
	    fin.usage.cache_read_input_tokens,
	    `stream().finalMessage(): ${show(fin)} vs ${show(m)}`);

	/* 2. stop_reason: end_turn (EOS), stop_sequence, max_tokens */
	const e = await create({ model: MODEL,
	    max_tokens: 2000, messages: user('a short answer please') });
	check(e.stop_reason === 'end_turn' && e.usage.output_tokens < 2000,
	    `end_turn: ${show(e)}`);
	const words = textOf(m).split(' ').filter((w) => w.length > 2);
	const stop = ' ' + words[2];
	const cut = textOf(m).slice(0, textOf(m).indexOf(stop));
	const ss = await create({ ...p,
	    stop_sequences: [stop, 'zzzz'] });
	check(ss.stop_reason === 'stop_sequence' && ss.stop_sequence === stop &&
	    textOf(ss) === cut, `stop_sequence ${show(stop)}: ${show(ss)}`);

	/* 3. tool_use forced by name: input valid against the schema */
	const schema = { type: 'object', properties: {
	    city: { type: 'string', minLength: 2 },
	    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
	    days: { type: 'integer', minimum: 1, maximum: 7 } },
	    required: ['city', 'unit'], additionalProperties: false };
	const tp = { model: MODEL, max_tokens: 200,
	    messages: user('weather in Paris?'),
	    tools: [{ name: 'get_weather', description: 'the weather',
	    input_schema: schema }, { name: 'other',
	    input_schema: { type: 'object' } }],
	    tool_choice: { type: 'tool', name: 'get_weather' } };
	const t = await create(tp);
	const tu = t.content.find((b) => b.type === 'tool_use');
	const validate = new Ajv().compile(schema);
	check(t.stop_reason === 'tool_use' && tu && tu.name === 'get_weather' &&
	    tu.id.startsWith('toolu_') && validate(tu.input),
	    `tool_use: ${show(t)} ${show(validate.errors)}`);
	const tevs = replay(await events(tp));
	check(tevs.ok && tevs.blocks.length === 1 &&
	    tevs.blocks[0].type === 'tool_use' &&
	    tevs.blocks[0].deltas.every((d) => d === 'input_json_delta') &&
	    show(JSON.parse(tevs.blocks[0].text)) === show(tu.input),
	    `streamed tool_use: ${show(tevs)}`);
	const tfin = await client.messages.stream(tp).finalMessage();
	check(show(tfin.content.find((b) => b.type === 'tool_use')?.input) ===
	    show(tu.input), `stream() tool_use: ${show(tfin)}`);

	/* 4. thinking before the text, with a signature */
	const hp = { model: MODEL, max_tokens: 64, messages: user('think'),
	    thinking: { type: 'enabled', budget_tokens: 16 } };
	const h = await create(hp);
	check(h.content.length === 2 && h.content[0].type === 'thinking' &&
	    h.content[0].thinking.length > 0 &&
	    h.content[0].signature.length > 0 &&
	    h.content[1].type === 'text' && h.content[1].text.length > 0 &&
	    h.usage.output_tokens > 16 && h.usage.output_tokens <= 64,
	    `thinking: ${show(h)}`);
	const hevs = replay(await events(hp));
	check(hevs.ok && hevs.blocks.length === 2 &&
	    hevs.blocks[0].type === 'thinking' &&
	    hevs.blocks[0].deltas.at(-1) === 'signature_delta' &&
	    hevs.blocks[0].deltas.slice(0, -1).every((d) =>
	    d === 'thinking_delta') &&
	    hevs.blocks[0].text === h.content[0].thinking &&
	    hevs.blocks[0].signature === h.content[0].signature &&
	    hevs.blocks[1].type === 'text' &&
	    hevs.blocks[1].text === h.content[1].text,
	    `streamed thinking: ${show(hevs)}`);

	/* 5. countTokens: a fresh prompt's input_tokens; the same request's
	 * usage in all */
	const nonce = `n${Date.now()}${Math.random()}`;
	/* the nonce first: no block of the prefix cache holds its start */
	const cp = { model: MODEL, messages: user('count me'),
	    system: `${nonce} be brief` };
	const c = await client.messages.countTokens(cp);
	valid('Count', c, 'countTokens');
	const cm = await create({ ...cp, max_tokens: 5 });
	check(c.input_tokens > 0 && c.input_tokens === cm.usage.input_tokens &&
	    cm.usage.cache_read_input_tokens === 0,
	    `countTokens ${show(c)} vs usage ${show(cm.usage)}`);
	const cm2 = await create({ ...cp, max_tokens: 5 });
	check(c.input_tokens === cm2.usage.input_tokens +
	    cm2.usage.cache_read_input_tokens +
	    cm2.usage.cache_creation_input_tokens,
	    `countTokens ${show(c)} vs a repeat's usage ${show(cm2.usage)}`);

	/* 6. errors as the SDK's classes */
	const expect = async (what, cls, type, fn) => {
		try {
			await fn();
			check(false, `${what}: no error`);
		} catch (err) {
			valid('Error', err.error, what);
			check(err instanceof cls && err.error?.type === 'error' &&
			    err.error?.error?.type === type, `${what}: ` +
			    `${err?.constructor?.name} ${err?.status} ` +
			    show(err?.error));
		}
	};
	await expect('image block', Anthropic.BadRequestError,
	    'invalid_request_error', () => client.messages.create({
	    model: MODEL, max_tokens: 5, messages: [{ role: 'user',
	    content: [{ type: 'image', source: { type: 'base64',
	    media_type: 'image/png', data: 'AAAA' } }] }] }));
	await expect('wrong key', Anthropic.AuthenticationError,
	    'authentication_error', () => new Anthropic({ baseURL: BASE,
	    apiKey: 'wrong', maxRetries: 0 }).messages.create(p));
	await expect('unknown model', Anthropic.NotFoundError,
	    'not_found_error', () => client.messages.create({ ...p,
	    model: 'claude-nope' }));
	const failing = (kind) => new Anthropic({ baseURL: BASE, apiKey: KEY,
	    maxRetries: 0, defaultHeaders: { 'X-Tokstream-Failure': kind } });
	await expect('rate_limit', Anthropic.RateLimitError,
	    'rate_limit_error', () => failing('rate_limit').messages.create(p));
	await expect('overloaded (529)', Anthropic.InternalServerError,
	    'overloaded_error', () => failing('overloaded').messages.create(p));
	try {
		const s = await failing('midstream_error; after=3').messages
		    .create({ ...p, stream: true });
		let n = 0;
		for await (const ev of s) {
			valid('Event', ev, 'before the error');
			if (ev.type === 'content_block_delta')
				n++;
		}
		check(false, `error event: the stream ended after ${n} deltas`);
	} catch (err) {
		valid('Error', err.error, 'error event');
		check(err instanceof Anthropic.APIError &&
		    err.error?.error?.type === 'api_error',
		    `error event: ${err?.constructor?.name} ${show(err?.error)}`);
	}

	/* 7. leaving after 5 text deltas stops the generation */
	const { data: s, response } = await client.messages.create({
	    model: MODEL, max_tokens: 400, messages: user('leave early'),
	    stream: true, prefill_ms: 0, tpot_ms: 20 }).withResponse();
	const id = response.headers.get('x-request-id');
	let n = 0;
	for await (const ev of s) {
		if (ev.type === 'content_block_delta' &&
		    ev.delta.type === 'text_delta' && ++n === 5)
			s.controller.abort();
	}
	const d = await debugWhenDone(id);
	check(d && d.status === 'cancelled' && d.finish_reason === 'abort' &&
	    d.generated <= 6, `abort after ${n} deltas: ${show(d)}`);

	/* 8. ... and after 5 thinking deltas, while the model still thinks */
	const { data: ts, response: tr } = await client.messages.create({
	    model: MODEL, max_tokens: 400, messages: user('think, then leave'),
	    thinking: { type: 'enabled', budget_tokens: 200 }, stream: true,
	    prefill_ms: 0, tpot_ms: 20 }).withResponse();
	const tid = tr.headers.get('x-request-id');
	let tn = 0;
	for await (const ev of ts) {
		check(!(ev.type === 'content_block_delta' &&
		    ev.delta.type === 'text_delta'), 'abort in thinking: a text delta');
		if (ev.type === 'content_block_delta' &&
		    ev.delta.type === 'thinking_delta' && ++tn === 5)
			ts.controller.abort();
	}
	const td = await debugWhenDone(tid);
	check(td && td.status === 'cancelled' && td.finish_reason === 'abort' &&
	    td.generated <= 6, `abort after ${tn} thinking deltas: ${show(td)}`);

	if (failures.length > 0) {
		for (const f of failures)
			console.log(`FAIL: ${f}`);
		process.exit(1);
	}
	console.log(`ok: @anthropic-ai/sdk ${VERSION} against ${BASE}, ` +
	    `${checks} checks, ${validated} objects validated`);
}

main().catch((err) => {
	console.log(`FAIL: ${err?.stack ?? err}`);
	process.exit(1);
});
