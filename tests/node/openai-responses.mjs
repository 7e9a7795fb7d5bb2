#!/usr/bin/env node
/*
 * openai-responses.mjs BASE - the official OpenAI client for JavaScript
 * (npm "openai") against tokstream's POST /v1/responses through lighttpd,
 * the Responses API that current SDKs default to:
 *   - responses.create without stream: status, output_text (the SDK's
 *     own join of the output), usage, instructions and max_output_tokens
 *     echoed; the same text as chat.completions.create with the same
 *     messages (instructions as the system message);
 *   - with stream: the SDK parses every event (type and sequence_number
 *     in order), the deltas joined equal the non-stream text, the last
 *     event is response.completed or response.incomplete with the whole
 *     response;
 *   - responses.stream() and finalResponse() (the SDK's accumulator);
 *   - a message-list input with input_text parts;
 *   - max_output_tokens reached: status incomplete, reason
 *     max_output_tokens; an error after the stream began: the SDK throws;
 *   - aborting the stream cancels the generation (/_debug/generated).
 * Prints one line per failure and exits 1, or a summary and exits 0.
 */
import OpenAI from 'openai';
import { VERSION } from 'openai/version';

const baseArg = process.argv[2] || process.env.BASE;
const MODEL = 'tokstream-sim';
const failures = [];
let checks = 0;

function check(ok, what) {
	checks++;
	if (!ok)
		failures.push(what);
	return ok;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const show = (v) => JSON.stringify(v);

async function debugWhenDone(id) {
	let d;
	for (let i = 0; i < 250; i++) {
		d = await (await fetch(`${baseArg}/_debug/generated?id=${id}`))
		    .json();
		if (d.status !== 'running')
			return d;
		await sleep(20);
	}
	return d;
}

const client = new OpenAI({
	baseURL: `${baseArg}/v1`,
	apiKey: 'sk-tokstream-any-key',
	maxRetries: 0,
	timeout: 20000,
});

const ORDER_START = ['response.created', 'response.in_progress',
    'response.output_item.added', 'response.content_part.added'];
const ORDER_END = ['response.output_text.done', 'response.content_part.done',
    'response.output_item.done'];

/* Reads a streamed response: the event order, deltas, the final object. */
async function readStream(stream, name) {
	const r = { types: [], text: '', last: null, seqOk: true };
	let seq = 0;

	for await (const ev of stream) {
		r.types.push(ev.type);
		if (ev.sequence_number !== seq++)
			r.seqOk = false;
		if (ev.type === 'response.output_text.delta')
			r.text += ev.delta;
		if (ev.type === 'response.completed' ||
		    ev.type === 'response.incomplete')
			r.last = ev.response;
	}
	const deltas = r.types.filter((t) => t ===
	    'response.output_text.delta').length;
	const want = [...ORDER_START, ...Array(deltas).fill(
	    'response.output_text.delta'), ...ORDER_END];
	check(show(r.types.slice(0, -1)) === show(want) && r.seqOk,
	    `${name}: events ${show(r.types)}`);
	return r;
}

async function main() {
	const params = { model: MODEL, instructions: 'be brief',
	    input: 'tell me about streams', max_output_tokens: 24, seed: 7 };
	const { data: full, response } = await client.responses
	    .create(params).withResponse();
	const id = response.headers.get('x-request-id');
	check(full.id === `resp_${id}` && full.object === 'response' &&
	    full.model === MODEL, `ids: ${full.id} ${full.object} ${id}`);
	check(['completed', 'incomplete'].includes(full.status) &&
	    typeof full.output_text === 'string' && full.output_text.length > 0,
	    `status/output_text: ${full.status} ${show(full.output_text)}`);
	check(full.instructions === 'be brief' &&
	    full.max_output_tokens === 24, `echo: ${full.instructions} ` +
	    `${full.max_output_tokens}`);
	const u = full.usage;
	check(u.input_tokens > 0 && u.output_tokens > 0 && u.output_tokens <=
	    24 && u.total_tokens === u.input_tokens + u.output_tokens,
	    `usage ${show(u)}`);
	const d = await debugWhenDone(id);
	check(d.generated === u.output_tokens, `generated ${d.generated} vs ` +
	    `usage ${u.output_tokens}`);

	/* the same messages through chat: the same text */
	const chat = await client.chat.completions.create({ model: MODEL,
	    messages: [{ role: 'system', content: 'be brief' }, { role: 'user',
	    content: 'tell me about streams' }], max_tokens: 24, seed: 7 });
	check(chat.choices[0].message.content === full.output_text,
	    `chat text ${show(chat.choices[0].message.content)} vs ` +
	    `${show(full.output_text)}`);

	/* streamed: the same text, the order OpenAI sends */
	const st = await readStream(await client.responses.create({ ...params,
	    stream: true }), 'stream');
	const lastText = st.last?.output?.[0]?.content?.[0]?.text;
	check(st.text === full.output_text && lastText === full.output_text &&
	    st.last?.status === full.status, `stream text ${show(st.text)} / ` +
	    `final ${show(st.last?.status)} ${show(lastText)}`);

	/* the SDK's accumulator */
	const acc = client.responses.stream(params);
	const fin = await acc.finalResponse();
	check(fin.output_text === full.output_text, `finalResponse ` +
	    `${show(fin.output_text)}`);

	/* a message list with input_text parts */
	const list = await client.responses.create({ model: MODEL,
	    instructions: 'be brief', max_output_tokens: 24, seed: 7,
	    input: [{ role: 'user', content: [{ type: 'input_text',
	    text: 'tell me about streams' }] }] });
	check(list.output_text === full.output_text, `message-list input ` +
	    `${show(list.output_text)}`);

	/* max_output_tokens reached */
	const inc = await client.responses.create({ model: MODEL, input: 'x',
	    max_output_tokens: 3, ignore_eos: true });
	check(inc.status === 'incomplete' && inc.incomplete_details?.reason ===
	    'max_output_tokens' && inc.usage.output_tokens === 3,
	    `incomplete: ${inc.status} ${show(inc.incomplete_details)}`);

	/* an error after the stream began: OpenAI's "error" event, then
	 * response.failed, as the SDK yields them */
	{
		const es = await client.responses.create({ model: MODEL,
		    input: 'hi', max_output_tokens: 10, ignore_eos: true,
		    error_after: 3, stream: true });
		const types = [];
		let err = null, failed = null, text = '';
		for await (const ev of es) {
			types.push(ev.type);
			if (ev.type === 'response.output_text.delta')
				text += ev.delta;
			if (ev.type === 'error')
				err = ev;
			if (ev.type === 'response.failed')
				failed = ev.response;
		}
		check(err?.code === 'injected_error' && failed?.status ===
		    'failed' && failed?.error?.code === 'server_error' &&
		    types.at(-1) === 'response.failed' && text.length > 0,
		    `stream error: ${show(types)} ${show(err)}`);
	}

	/* leaving: abort cancels the generation */
	const { data: s, response: r2 } = await client.responses.create({
	    model: MODEL, input: 'leave', max_output_tokens: 200,
	    ignore_eos: true, stream: true, prefill_ms: 0, tpot_ms: 20 })
	    .withResponse();
	const id2 = r2.headers.get('x-request-id');
	let n = 0;
	try {
		for await (const ev of s) {
			if (ev.type === 'response.output_text.delta' && ++n === 5)
				s.controller.abort();
		}
	} catch (e) {
		void e;                 /* the abort ends the iteration */
	}
	const d2 = await debugWhenDone(id2);
	check(d2.status === 'cancelled' && d2.finish_reason === 'abort' &&
	    d2.generated <= n + 4, `abort after ${n} deltas: ${show(d2)}`);

	if (failures.length > 0) {
		for (const f of failures)
			console.log(`FAIL: ${f}`);
		process.exit(1);
	}
	console.log(`ok: openai ${VERSION} responses against ${baseArg}/v1, ` +
	    `${checks} checks`);
}

if (!baseArg || !URL.canParse(baseArg)) {
	console.log('usage: openai-responses.mjs BASE (e.g. http://127.0.0.1:8170)');
	process.exit(2);
}
main().catch((err) => {
	console.log(`FAIL: exception: ${err?.stack || err}`);
	process.exit(1);
});
