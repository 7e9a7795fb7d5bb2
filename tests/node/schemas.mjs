#!/usr/bin/env node
/*
 * schemas.mjs BASE - every body and every streamed event of tokstream's
 * /v1 endpoints validated with ajv (npm "ajv" 8, a JSON Schema validator)
 * against the OpenAI OpenAPI specification's response schemas, as
 * transcribed in tests/node/openai-schemas.json:
 *   - GET /v1/models (ListModelsResponse), GET /v1/models/{model} (Model);
 *   - POST /v1/chat/completions (CreateChatCompletionResponse, and
 *     CreateChatCompletionStreamResponse for every chunk) and
 *     POST /v1/completions (CreateCompletionResponse; its chunks
 *     CreateCompletionStreamChunk, see below), each without stream and
 *     with it, with and without stream_options.include_usage, with a stop
 *     string (finish "stop"), with a small max_tokens (finish "length"),
 *     with error_after 3 (a 500 without stream, the mid-stream error event
 *     with it), and with a prefill longer than the keep-alive interval (the
 *     newlines before a JSON body, the ": keep-alive" comments of a stream);
 *   - POST /v1/responses (Response) and every event of its stream
 *     (ResponseCreatedEvent, ResponseInProgressEvent,
 *     ResponseOutputItemAddedEvent, ResponseContentPartAddedEvent,
 *     ResponseTextDeltaEvent, ResponseTextDoneEvent,
 *     ResponseContentPartDoneEvent, ResponseOutputItemDoneEvent,
 *     ResponseCompletedEvent, ResponseIncompleteEvent, and with
 *     error_after 3 ResponseErrorEvent then ResponseFailedEvent), each
 *     event's "event:" line naming its data's type;
 *   - reasoning: a chat answer and stream with reasoning_effort, and a
 *     Responses answer and streams with reasoning (its item and events:
 *     ReasoningItem and the ResponseReasoning*Event definitions,
 *     transcribed from the openai SDK's types, responses.d.ts);
 *   - the errors (ErrorResponse): 404 unknown model, 400 invalid field and
 *     invalid JSON, 405, 404 unknown /v1 path, 414 query over 30,000 bytes.
 * Prints "FAIL: <what>: <ajv errors>" per failure and exits 1, or
 * "ok: N objects validated" and exits 0.
 *
 * schemas.mjs --selftest feeds the same validators deliberately broken
 * objects (a chat.completion without "choices", a message without
 * "refusal", ...): each must be rejected (a FAIL line, exit 1), and two
 * valid controls must be accepted (a SELFTEST-CONTROL-REJECTED line
 * otherwise); schemas.bats checks both.
 *
 * The schemas: tokstream's own draft-07 transcription of
 * github.com/openai/openai-openapi openapi.json at commit
 * db3e53198a66732cfe161339ea63bf36fc0137ad (OpenAPI 3.1.0, info.version
 * 2.3.0). The conversion (details in the file's "$comment"):
 *   - nullability as type unions (anyOf null, and the OpenAPI 3.0
 *     `nullable: true` this 3.1 document still uses on the chat chunk's
 *     usage, finish_reason and logprobs, honoured as the spec describes);
 *   - dropped: x-oaiMeta and the other x- keys, examples, descriptions,
 *     defaults, deprecated, discriminators, and `format` (unixtime, uri);
 *   - unknown properties allowed, as in the spec;
 *   - Response's allOf flattened; shapes tokstream never sends (tool calls,
 *     tools, tool_choice objects, moderation, prompt, output items other
 *     than messages, the FilePath annotation) accepted loosely.
 * Exceptions, where OpenAI's wire behaviour differs from the spec, each a
 * definition of its own: streamed /v1/completions chunks carry
 * finish_reason null before the last and usage null but in the usage chunk
 * (CreateCompletionStreamChunk; CreateCompletionResponse has neither
 * nullable); response.created, response.in_progress and response.failed
 * carry usage null (ResponseWhileStreaming; Response.usage is not
 * nullable); an error after a chat or completions stream's 200 is
 * data: {"error": ...} (validated as ErrorResponse); data: [DONE] is no
 * JSON (checked to come once and last, and never on /v1/responses).
 *
 * Node 18 (Debian 12) or later: the global fetch, no JSON import.
 */
import { readFileSync } from 'node:fs';
import Ajv from 'ajv';

const AjvClass = Ajv.default || Ajv;
const MODEL = 'tokstream-sim';
const schemaDoc = JSON.parse(readFileSync(
	new URL('./openai-schemas.json', import.meta.url), 'utf8'));

const ajv = new AjvClass({
	allErrors: true,
	strict: true,
	strictTypes: false,	/* allOf branches with properties but no type */
	strictRequired: false,	/* CompletionCommon requires finish_reason, the allOf adds it */
	allowUnionTypes: true,
});
ajv.addSchema(schemaDoc);

const validators = new Map();
function validator(name) {
	let v = validators.get(name);
	if (!v) {
		v = ajv.getSchema(`${schemaDoc.$id}#/definitions/${name}`);
		if (!v)
			throw new Error(`no schema ${name} in openai-schemas.json`);
		validators.set(name, v);
	}
	return v;
}

const failures = [];
let validated = 0;
const show = (v) => {
	const s = JSON.stringify(v) ?? String(v);
	return s.length > 400 ? s.slice(0, 400) + '...' : s;
};

function fail(what, detail) {
	failures.push(`FAIL: ${what}: ${detail}`);
}

function ajvErrors(errors) {
	return errors.map((e) => {
		const p = e.params && Object.keys(e.params).length ?
			' ' + JSON.stringify(e.params) : '';
		return `${e.instancePath || '/'} ${e.message}${p}`;
	}).join('; ');
}

/* validate(NAME, OBJ, WHAT): one object against one schema */
function validate(name, obj, what) {
	const v = validator(name);
	validated++;
	if (v(obj))
		return true;
	fail(`${what} (${name})`, `${ajvErrors(v.errors)}\n    object: ${show(obj)}`);
	return false;
}

/* SSE: the events of an event stream, per the WHATWG parsing rules that
 * matter here (data: lines joined by \n, event:, comments). */
function parseSSE(text) {
	const events = [];
	let comments = 0;
	let cur = null;
	const flush = () => {
		if (cur && cur.data.length)
			events.push({ event: cur.event, data: cur.data.join('\n'),
				other: cur.other });
		cur = null;
	};
	const lines = text.split(/\r\n|\r|\n/);
	const terminated = lines.length > 1 && lines[lines.length - 1] === '' &&
		lines[lines.length - 2] === '';
	for (const line of lines) {
		if (line === '') {
			flush();
			continue;
		}
		if (line.startsWith(':')) {
			comments++;
			continue;
		}
		cur ??= { event: null, data: [], other: [] };
		const i = line.indexOf(':');
		const field = i < 0 ? line : line.slice(0, i);
		const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
		if (field === 'data')
			cur.data.push(value);
		else if (field === 'event')
			cur.event = value;
		else
			cur.other.push(field);
	}
	flush();
	return { events, comments, terminated };
}

async function request(method, path, body) {
	const init = { method, signal: AbortSignal.timeout(30000) };
	if (body !== undefined) {
		init.headers = { 'Content-Type': 'application/json' };
		init.body = typeof body === 'string' ? body : JSON.stringify(body);
	}
	const res = await fetch(base + path, init);
	const text = await res.text();
	return { status: res.status, type: res.headers.get('content-type') || '', text };
}

function parseJSON(text, what) {
	try {
		return JSON.parse(text);
	} catch (e) {
		fail(what, `not JSON (${e.message}): ${show(text)}`);
		return undefined;
	}
}

/* a JSON body: the status, then the schema */
async function jsonCase(what, method, path, body, status, schema) {
	let r;
	try {
		r = await request(method, path, body);
	} catch (e) {
		fail(what, `request failed: ${e.message}`);
		return undefined;
	}
	if (r.status !== status)
		fail(what, `status ${r.status}, expected ${status}: ${show(r.text)}`);
	const obj = parseJSON(r.text, what);
	if (obj !== undefined)
		validate(r.status === status ? schema : 'ErrorResponse', obj, what);
	return obj;
}

async function streamText(what, path, body) {
	let r;
	try {
		r = await request('POST', path, body);
	} catch (e) {
		fail(what, `request failed: ${e.message}`);
		return undefined;
	}
	if (r.status !== 200) {
		fail(what, `status ${r.status}, expected 200: ${show(r.text)}`);
		return undefined;
	}
	if (!r.type.startsWith('text/event-stream'))
		fail(what, `Content-Type ${r.type}, expected text/event-stream`);
	const sse = parseSSE(r.text);
	if (!sse.terminated)
		fail(what, 'the stream does not end with an empty line');
	return sse;
}

/* a chat or completions stream: every chunk against CHUNK, the mid-stream
 * error as ErrorResponse, [DONE] once and last; returns the finish reasons */
async function chunkStream(what, path, body, chunk, opts = {}) {
	const sse = await streamText(what, path, body);
	const reasons = [];
	if (!sse)
		return reasons;
	const { events } = sse;
	if (opts.keepalive && sse.comments === 0)
		fail(what, 'no keep-alive comment before the first event');
	const dones = events.filter((e) => e.data === '[DONE]').length;
	if (dones !== 1 || events.length === 0 ||
	    events[events.length - 1].data !== '[DONE]')
		fail(what, `data: [DONE] ${dones} times, expected once and last`);
	let errors = 0;
	events.forEach((e, i) => {
		const at = `${what}, event ${i}`;
		if (e.event !== null || e.other.length)
			fail(at, `unexpected SSE fields: event ${e.event}, ${e.other}`);
		if (e.data === '[DONE]')
			return;
		const obj = parseJSON(e.data, at);
		if (obj === undefined)
			return;
		if (obj && typeof obj === 'object' && 'error' in obj) {
			errors++;
			validate('ErrorResponse', obj, `${at} (mid-stream error)`);
			if (i !== events.length - 2)
				fail(at, 'the error event is not the last before [DONE]');
			return;
		}
		validate(chunk, obj, at);
		for (const c of obj.choices || [])
			if (c && c.finish_reason != null)
				reasons.push(c.finish_reason);
		if (body.stream_options?.include_usage) {
			const last = i === events.length - 2;
			if (last !== (obj.usage != null))
				fail(at, `usage ${show(obj.usage)} on ${last ? 'the last' : 'a non-last'} chunk`);
		}
	});
	if (opts.error ? errors !== 1 : errors !== 0)
		fail(what, `${errors} error events, expected ${opts.error ? 1 : 0}`);
	return reasons;
}

const RESPONSE_EVENTS = {
	'response.created': 'ResponseCreatedEvent',
	'response.in_progress': 'ResponseInProgressEvent',
	'response.output_item.added': 'ResponseOutputItemAddedEvent',
	'response.output_item.done': 'ResponseOutputItemDoneEvent',
	'response.content_part.added': 'ResponseContentPartAddedEvent',
	'response.content_part.done': 'ResponseContentPartDoneEvent',
	'response.output_text.delta': 'ResponseTextDeltaEvent',
	'response.output_text.done': 'ResponseTextDoneEvent',
	'response.completed': 'ResponseCompletedEvent',
	'response.incomplete': 'ResponseIncompleteEvent',
	'response.failed': 'ResponseFailedEvent',
	error: 'ResponseErrorEvent',
	/* reasoning (docs/API.md "Reasoning"): the SDK's types */
	'response.reasoning_text.delta': 'ResponseReasoningTextDeltaEvent',
	'response.reasoning_text.done': 'ResponseReasoningTextDoneEvent',
	'response.reasoning_summary_part.added':
	    'ResponseReasoningSummaryPartAddedEvent',
	'response.reasoning_summary_part.done':
	    'ResponseReasoningSummaryPartDoneEvent',
	'response.reasoning_summary_text.delta':
	    'ResponseReasoningSummaryTextDeltaEvent',
	'response.reasoning_summary_text.done':
	    'ResponseReasoningSummaryTextDoneEvent',
};

/* a Responses stream: each event's schema by its type; returns the types */
async function responseStream(what, body, opts = {}) {
	const sse = await streamText(what, '/v1/responses', body);
	const types = [];
	if (!sse)
		return types;
	if (opts.keepalive && sse.comments === 0)
		fail(what, 'no keep-alive comment before the first event');
	sse.events.forEach((e, i) => {
		const at = `${what}, event ${i} (${e.event})`;
		if (e.data === '[DONE]') {
			fail(at, 'data: [DONE] on /v1/responses');
			return;
		}
		const obj = parseJSON(e.data, at);
		if (obj === undefined)
			return;
		const type = obj && obj.type;
		types.push(type);
		if (e.event !== type)
			fail(at, `event: ${e.event} but the data's type is ${type}`);
		if (obj && obj.sequence_number !== i)
			fail(at, `sequence_number ${obj.sequence_number}, expected ${i}`);
		const schema = RESPONSE_EVENTS[type];
		if (!schema) {
			fail(at, `an event type this test has no schema for: ${show(obj)}`);
			return;
		}
		validate(schema, obj, at);
	});
	return types;
}

/* the finish reasons of a request: WANT once, or none when WANT is null
 * (a stream that failed has no finish chunk) */
function expectReasons(what, got, want) {
	const expected = want === null ? [] : [want];
	if (show(got) !== show(expected))
		fail(what, `finish reasons ${show(got)}, expected ${show(expected)}`);
}

function expectLast(what, types, want) {
	const tail = types.slice(-want.length);
	if (show(tail) !== show(want))
		fail(what, `the stream ends with ${show(tail)}, expected ${show(want)}`);
}

/* a stop string that the model is sure to produce for a request: a word
 * of TEXT, its answer to the same request (same seed) without a stop */
function stopFrom(text) {
	const words = (text || '').split(' ').filter((w) => /^[A-Za-z]{2,}$/.test(w));
	return words.length >= 2 ? ' ' + words[1] : null;
}

let base;

async function live() {
	const fast = { model: MODEL, prefill_ms: 0, tpot_ms: 1, seed: 7 };
	const slow = { prefill_ms: 1200 };	/* over --keepalive-ms 500 */
	const usage = { stream: true, stream_options: { include_usage: true } };

	/* models */
	const list = await jsonCase('GET /v1/models', 'GET', '/v1/models',
		undefined, 200, 'ListModelsResponse');
	if (list && !(list.data || []).some((m) => m && m.id === MODEL))
		fail('GET /v1/models', `${MODEL} not listed: ${show(list)}`);
	await jsonCase(`GET /v1/models/${MODEL}`, 'GET', `/v1/models/${MODEL}`,
		undefined, 200, 'Model');

	/* chat */
	const chat = { ...fast, messages: [{ role: 'user', content: 'hi' }] };
	const C = '/v1/chat/completions';
	const cl = await jsonCase('chat, max_tokens 8', 'POST', C,
		{ ...chat, max_tokens: 8 }, 200, 'CreateChatCompletionResponse');
	expectReasons('chat, max_tokens 8',
		(cl?.choices || []).map((c) => c.finish_reason), 'length');
	const cstop = stopFrom(cl?.choices?.[0]?.message?.content);
	if (!cstop)
		fail('chat, max_tokens 8', `no word to stop at in ${show(cl)}`);
	else {
		const cs = await jsonCase('chat, stop', 'POST', C,
			{ ...chat, stop: [cstop], max_tokens: 64 }, 200,
			'CreateChatCompletionResponse');
		expectReasons('chat, stop',
			(cs?.choices || []).map((c) => c.finish_reason), 'stop');
	}
	await jsonCase('chat, content parts, max_completion_tokens 3', 'POST', C,
		{ ...fast, max_completion_tokens: 3, messages: [
			{ role: 'system', content: 'be brief' },
			{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] },
		200, 'CreateChatCompletionResponse');
	await jsonCase('chat, prefill over the keep-alive interval', 'POST', C,
		{ ...chat, ...slow, max_tokens: 4 }, 200, 'CreateChatCompletionResponse');
	await jsonCase('chat, error_after 3', 'POST', C,
		{ ...chat, max_tokens: 10, error_after: 3 }, 500, 'ErrorResponse');
	const CH = 'CreateChatCompletionStreamResponse';
	expectReasons('chat stream, max_tokens 4', await chunkStream(
		'chat stream, max_tokens 4', C,
		{ ...chat, max_tokens: 4, stream: true }, CH), 'length');
	expectReasons('chat stream, include_usage', await chunkStream(
		'chat stream, include_usage', C,
		{ ...chat, ...usage, max_tokens: 4 }, CH), 'length');
	if (cstop) {
		expectReasons('chat stream, stop', await chunkStream(
			'chat stream, stop', C,
			{ ...chat, stop: cstop, max_tokens: 64, stream: true }, CH), 'stop');
		expectReasons('chat stream, stop, include_usage', await chunkStream(
			'chat stream, stop, include_usage', C,
			{ ...chat, ...usage, stop: [cstop], max_tokens: 64 }, CH), 'stop');
	}
	expectReasons('chat stream, keep-alive', await chunkStream(
		'chat stream, keep-alive', C,
		{ ...chat, ...usage, ...slow, max_tokens: 3 }, CH,
		{ keepalive: true }), 'length');
	expectReasons('chat stream, error_after 3', await chunkStream(
		'chat stream, error_after 3', C,
		{ ...chat, max_tokens: 10, error_after: 3, stream: true }, CH,
		{ error: true }), null);
	await chunkStream('chat stream, error_after 3, include_usage', C,
		{ ...chat, ...usage, max_tokens: 10, error_after: 3 }, CH,
		{ error: true });

	/* completions */
	const comp = { ...fast, prompt: 'hi' };
	const P = '/v1/completions';
	const pl = await jsonCase('completions, max_tokens 8', 'POST', P,
		{ ...comp, max_tokens: 8 }, 200, 'CreateCompletionResponse');
	expectReasons('completions, max_tokens 8',
		(pl?.choices || []).map((c) => c.finish_reason), 'length');
	const pstop = stopFrom(pl?.choices?.[0]?.text);
	if (!pstop)
		fail('completions, max_tokens 8', `no word to stop at in ${show(pl)}`);
	else {
		const ps = await jsonCase('completions, stop', 'POST', P,
			{ ...comp, stop: [pstop], max_tokens: 64 }, 200,
			'CreateCompletionResponse');
		expectReasons('completions, stop',
			(ps?.choices || []).map((c) => c.finish_reason), 'stop');
	}
	await jsonCase('completions, max_tokens 0', 'POST', P,
		{ ...comp, max_tokens: 0 }, 200, 'CreateCompletionResponse');
	await jsonCase('completions, prompt array, default max_tokens', 'POST', P,
		{ ...fast, prompt: ['hi'] }, 200, 'CreateCompletionResponse');
	await jsonCase('completions, prefill over the keep-alive interval', 'POST',
		P, { ...comp, ...slow, max_tokens: 4 }, 200, 'CreateCompletionResponse');
	await jsonCase('completions, error_after 3', 'POST', P,
		{ ...comp, max_tokens: 10, error_after: 3 }, 500, 'ErrorResponse');
	const PC = 'CreateCompletionStreamChunk';
	expectReasons('completions stream, max_tokens 4', await chunkStream(
		'completions stream, max_tokens 4', P,
		{ ...comp, max_tokens: 4, stream: true }, PC), 'length');
	expectReasons('completions stream, include_usage', await chunkStream(
		'completions stream, include_usage', P,
		{ ...comp, ...usage, max_tokens: 4 }, PC), 'length');
	if (pstop) {
		expectReasons('completions stream, stop', await chunkStream(
			'completions stream, stop', P,
			{ ...comp, stop: pstop, max_tokens: 64, stream: true }, PC), 'stop');
		expectReasons('completions stream, stop, include_usage',
			await chunkStream('completions stream, stop, include_usage', P,
				{ ...comp, ...usage, stop: [pstop], max_tokens: 64 }, PC),
			'stop');
	}
	expectReasons('completions stream, keep-alive', await chunkStream(
		'completions stream, keep-alive', P,
		{ ...comp, ...usage, ...slow, max_tokens: 3 }, PC,
		{ keepalive: true }), 'length');
	expectReasons('completions stream, error_after 3', await chunkStream(
		'completions stream, error_after 3', P,
		{ ...comp, max_tokens: 10, error_after: 3, stream: true }, PC,
		{ error: true }), null);
	await chunkStream('completions stream, error_after 3, include_usage', P,
		{ ...comp, ...usage, max_tokens: 10, error_after: 3 }, PC,
		{ error: true });

	/* the simulator's agent features (docs/API.md "The simulator for
	 * agents and gateways"): logprobs, tool calls, n, json_schema */
	const weather = { type: 'function', function: { name: 'get_weather',
		parameters: { type: 'object', properties: { location: { type: 'string' },
			unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
		required: ['location'], additionalProperties: false } } };
	const lp = { logprobs: true, top_logprobs: 3 };
	await jsonCase('chat, logprobs', 'POST', C, { ...chat, ...lp, max_tokens: 6 },
		200, 'CreateChatCompletionResponse');
	await chunkStream('chat stream, logprobs', C,
		{ ...chat, ...lp, ...usage, max_tokens: 6 }, CH);
	await jsonCase('completions, logprobs 2', 'POST', P,
		{ ...comp, logprobs: 2, max_tokens: 6 }, 200, 'CreateCompletionResponse');
	await chunkStream('completions stream, logprobs 2', P,
		{ ...comp, logprobs: 2, max_tokens: 6, stream: true }, PC);
	const tc = await jsonCase('chat, tool call', 'POST', C,
		{ ...chat, tools: [weather], tool_choice: 'required' }, 200,
		'CreateChatCompletionResponse');
	if (tc && tc.choices && tc.choices[0].finish_reason !== 'tool_calls')
		fail('chat, tool call', `finish_reason ${tc.choices[0].finish_reason}`);
	expectReasons('chat stream, tool call', await chunkStream(
		'chat stream, tool call', C,
		{ ...chat, ...usage, tools: [weather], tool_choice: 'required' }, CH),
		'tool_calls');
	await jsonCase('chat, n 3', 'POST', C, { ...chat, n: 3, max_tokens: 5 },
		200, 'CreateChatCompletionResponse');
	await chunkStream('chat stream, n 3', C,
		{ ...chat, ...usage, n: 3, max_tokens: 5 }, CH);
	await jsonCase('completions, n 2', 'POST', P, { ...comp, n: 2, max_tokens: 5 },
		200, 'CreateCompletionResponse');
	await jsonCase('chat, json_schema', 'POST', C, { ...chat, response_format:
		{ type: 'json_schema', json_schema: { name: 'w', strict: true,
			schema: weather.function.parameters } } }, 200,
		'CreateChatCompletionResponse');

	/* responses */
	const resp = { ...fast, instructions: 'be brief', input: 'hi' };
	const R = '/v1/responses';
	const rl = await jsonCase('responses, max_output_tokens 8', 'POST', R,
		{ ...resp, max_output_tokens: 8 }, 200, 'Response');
	if (rl && rl.status !== 'incomplete')
		fail('responses, max_output_tokens 8', `status ${rl.status}, expected incomplete`);
	const rtext = rl?.output?.[0]?.content?.[0]?.text;
	const rstop = stopFrom(rtext);
	if (!rstop)
		fail('responses, max_output_tokens 8', `no word to stop at in ${show(rl)}`);
	else {
		const rs = await jsonCase('responses, stop', 'POST', R,
			{ ...resp, stop: [rstop], max_output_tokens: 64 }, 200, 'Response');
		if (rs && rs.status !== 'completed')
			fail('responses, stop', `status ${rs.status}, expected completed`);
	}
	await jsonCase('responses, message items with input_text parts', 'POST', R,
		{ ...fast, max_output_tokens: 3, input: [
			{ type: 'message', role: 'developer', content: 'be brief' },
			{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] },
		200, 'Response');
	await jsonCase('responses, prefill over the keep-alive interval', 'POST', R,
		{ ...resp, ...slow, max_output_tokens: 4 }, 200, 'Response');
	await jsonCase('responses, error_after 3', 'POST', R,
		{ ...resp, max_output_tokens: 10, error_after: 3 }, 500, 'ErrorResponse');
	const head = ['response.created', 'response.in_progress',
		'response.output_item.added', 'response.content_part.added'];
	const tail = ['response.output_text.done', 'response.content_part.done',
		'response.output_item.done'];
	let t = await responseStream('responses stream, max_output_tokens 4',
		{ ...resp, max_output_tokens: 4, stream: true });
	if (show(t.slice(0, 4)) !== show(head))
		fail('responses stream, max_output_tokens 4', `starts with ${show(t.slice(0, 4))}`);
	expectLast('responses stream, max_output_tokens 4', t,
		[...tail, 'response.incomplete']);
	if (rstop) {
		t = await responseStream('responses stream, stop',
			{ ...resp, stop: rstop, max_output_tokens: 64, stream: true });
		expectLast('responses stream, stop', t, [...tail, 'response.completed']);
	}
	t = await responseStream('responses stream, keep-alive',
		{ ...resp, ...slow, max_output_tokens: 3, stream: true },
		{ keepalive: true });
	expectLast('responses stream, keep-alive', t, [...tail, 'response.incomplete']);
	t = await responseStream('responses stream, error_after 3',
		{ ...resp, max_output_tokens: 10, error_after: 3, stream: true });
	expectLast('responses stream, error_after 3', t, ['error', 'response.failed']);

	/* reasoning: chat's reasoning chunks and message, the Responses
	 * API's reasoning item and its events (text and summary) */
	const rc = await jsonCase('chat, reasoning_effort minimal', 'POST', C,
		{ ...chat, reasoning_effort: 'minimal', max_tokens: 20 }, 200,
		'CreateChatCompletionResponse');
	if (rc && !(rc.usage?.completion_tokens_details?.reasoning_tokens > 0))
		fail('chat, reasoning_effort minimal', `usage ${show(rc.usage)}`);
	await chunkStream('chat stream, reasoning_effort minimal', C,
		{ ...chat, reasoning_effort: 'minimal', max_tokens: 20,
		  stream: true, stream_options: { include_usage: true } },
		'CreateChatCompletionStreamResponse');
	const rr = await jsonCase('responses, reasoning minimal', 'POST', R,
		{ ...resp, reasoning: { effort: 'minimal' }, max_output_tokens: 20 },
		200, 'Response');
	if (rr && rr.output?.[0]?.type !== 'reasoning')
		fail('responses, reasoning minimal', `output ${show(rr.output)}`);
	for (const summary of [undefined, 'auto']) {
		const what = `responses stream, reasoning summary ${summary}`;
		t = await responseStream(what, { ...resp, max_output_tokens: 20,
			reasoning: { effort: 'minimal', summary }, stream: true });
		if (!t.includes(summary ? 'response.reasoning_summary_text.delta' :
		    'response.reasoning_text.delta'))
			fail(what, `no reasoning deltas in ${show(t)}`);
		expectLast(what, t, [...tail, 'response.incomplete']);
	}

	/* errors in the OpenAI shape */
	const E = 'ErrorResponse';
	const nope = 'no-such-model';
	await jsonCase('chat, unknown model', 'POST', C, { ...chat, model: nope }, 404, E);
	await jsonCase('completions, unknown model', 'POST', P, { ...comp, model: nope }, 404, E);
	await jsonCase('responses, unknown model', 'POST', R, { ...resp, model: nope }, 404, E);
	await jsonCase('GET /v1/models/{unknown}', 'GET', `/v1/models/${nope}`, undefined, 404, E);
	await jsonCase('chat, temperature 3', 'POST', C, { ...chat, temperature: 3 }, 400, E);
	await jsonCase('chat, role robot', 'POST', C,
		{ ...chat, messages: [{ role: 'robot', content: 'hi' }] }, 400, E);
	await jsonCase('chat, messages missing', 'POST', C, { model: MODEL }, 400, E);
	await jsonCase('completions, max_tokens -1', 'POST', P, { ...comp, max_tokens: -1 }, 400, E);
	await jsonCase('completions, n 17', 'POST', P, { ...comp, n: 17 }, 400, E);
	await jsonCase('responses, max_output_tokens 0', 'POST', R,
		{ ...resp, max_output_tokens: 0 }, 400, E);
	await jsonCase('chat, invalid JSON', 'POST', C, '{"model":', 400, E);
	await jsonCase('completions, empty body', 'POST', P, '', 400, E);
	await jsonCase('PUT /v1/chat/completions', 'PUT', C, undefined, 405, E);
	await jsonCase('GET /v1/responses', 'GET', R, undefined, 405, E);
	await jsonCase('DELETE /v1/models', 'DELETE', '/v1/models', undefined, 405, E);
	await jsonCase('GET /v1/nope', 'GET', '/v1/nope', undefined, 404, E);
	await jsonCase('POST /v1/nope', 'POST', '/v1/nope', chat, 404, E);
	const long = 'q=' + 'a'.repeat(29999);	/* 30,001 bytes */
	await jsonCase('GET /v1/models, 30,001-byte query', 'GET',
		`/v1/models?${long}`, undefined, 414, E);
	await jsonCase('POST /v1/chat/completions, 30,001-byte query', 'POST',
		`${C}?${long}`, chat, 414, E);
}

/* --selftest: broken objects must be rejected, the controls accepted */
function selftest() {
	const usage = { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 };
	const chat = {
		id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: MODEL,
		choices: [{ index: 0, logprobs: null, finish_reason: 'stop',
			message: { role: 'assistant', content: 'Hi', refusal: null } }],
		usage,
	};
	const noRefusal = structuredClone(chat);
	delete noRefusal.choices[0].message.refusal;
	const noChoices = structuredClone(chat);
	delete noChoices.choices;
	const chunk = {
		id: 'chatcmpl-2', object: 'chat.completion.chunk', created: 1, model: MODEL,
		choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'done' }],
		usage: null,
	};
	const compChunk = {
		id: 'cmpl-3', object: 'text_completion', created: 1, model: MODEL,
		choices: [{ index: 0, text: 'Hi', logprobs: null, finish_reason: null }],
		usage: null,
	};
	const response = {
		id: 'resp_4', object: 'response', created_at: 1, status: 'completed',
		error: null, incomplete_details: null, instructions: null, model: MODEL,
		output: [], parallel_tool_calls: true, metadata: {}, tool_choice: 'auto',
		tools: [], temperature: 1, top_p: 1, usage: null,
	};
	const broken = [
		['a chat.completion without "choices"', 'CreateChatCompletionResponse', noChoices],
		['a chat.completion whose message has no "refusal"', 'CreateChatCompletionResponse', noRefusal],
		['a chat.completion.chunk with finish_reason "done"', 'CreateChatCompletionStreamResponse', chunk],
		['a non-stream text_completion with finish_reason null', 'CreateCompletionResponse', compChunk],
		['response.completed with usage null', 'ResponseCompletedEvent',
			{ type: 'response.completed', sequence_number: 9, response }],
		['response.output_text.delta without "logprobs"', 'ResponseTextDeltaEvent',
			{ type: 'response.output_text.delta', sequence_number: 4, item_id: 'msg_4',
				output_index: 0, content_index: 0, delta: 'Hi' }],
		['an error without "param"', 'ErrorResponse',
			{ error: { message: 'x', type: 'invalid_request_error', code: null } }],
	];
	const controls = [
		['a valid chat.completion', 'CreateChatCompletionResponse', chat],
		['a streamed text_completion chunk with finish_reason and usage null',
			'CreateCompletionStreamChunk', compChunk],
		['response.created with usage null', 'ResponseCreatedEvent',
			{ type: 'response.created', sequence_number: 0,
				response: { ...response, status: 'in_progress' } }],
	];
	const lines = [];
	let rejected = 0;
	for (const [what, schema, obj] of broken) {
		const v = validator(schema);
		if (v(obj))
			lines.push(`SELFTEST-ACCEPTED: ${what} (${schema}) passed validation`);
		else {
			rejected++;
			lines.push(`FAIL: selftest ${what} (${schema}): ${ajvErrors(v.errors)}`);
		}
	}
	let accepted = 0;
	for (const [what, schema, obj] of controls) {
		const v = validator(schema);
		if (v(obj))
			accepted++;
		else
			lines.push(`SELFTEST-CONTROL-REJECTED: ${what} (${schema}): ${ajvErrors(v.errors)}`);
	}
	for (const l of lines)
		console.log(l);
	console.log(`selftest: ${rejected} of ${broken.length} broken objects rejected, ` +
		`${accepted} of ${controls.length} controls accepted`);
	process.exit(rejected || accepted !== controls.length ? 1 : 0);
}

if (process.argv[2] === '--selftest')
	selftest();
else {
	base = (process.argv[2] || process.env.BASE || '').replace(/\/+$/, '');
	if (!base) {
		console.error('usage: node schemas.mjs BASE (http://127.0.0.1:8170) | --selftest');
		process.exit(2);
	}
	try {
		await live();
	} catch (e) {
		fail('schemas.mjs', e.stack || String(e));
	}
	if (failures.length) {
		for (const f of failures)
			console.log(f);
		console.log(`${failures.length} failures, ${validated} objects validated`);
		process.exit(1);
	}
	console.log(`ok: ${validated} objects validated`);
}
