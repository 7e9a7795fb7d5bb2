#!/usr/bin/env node
/*
 * reasoning.mjs BASE CASE [FIELD] - tokstream's reasoning (docs/API.md
 * "Reasoning") read by the official clients, as reasoning.bats runs it:
 *   openai FIELD  the openai SDK (package "openai"): chat with
 *                 reasoning_effort "low", streamed (64 deltas of
 *                 delta[FIELD] before the content, the other field never
 *                 sent; usage's completion_tokens_details.reasoning_tokens
 *                 64) and not (message[FIELD] the same text); the
 *                 Responses API with reasoning {effort: "minimal"}: the
 *                 reasoning item (ResponseReasoningItem) before the
 *                 message, output_text only the message's, its events in
 *                 order (response.reasoning_text.delta ...), and with
 *                 summary "auto" the summary events; FIELD is "reasoning"
 *                 (the default server) or "reasoning_content" (a server
 *                 started with --reasoning-field reasoning_content
 *                 --reasoning always, where a request without an effort
 *                 thinks 256 tokens).
 *   ollama        the ollama npm client (package "ollama", dist/
 *                 browser.d.ts: Message.thinking, GenerateResponse.
 *                 thinking): chat and generate with think, streamed and
 *                 not; think false gives none.
 *   cancel        the openai SDK's chat stream with reasoning_effort
 *                 "high" on a slow cadence (tpot_ms 1000), broken off
 *                 after 3 reasoning deltas (the SDK aborts its request);
 *                 prints "id N" for reasoning.bats to check the
 *                 generation stopped.
 * Prints one line per failure and exits 1, or a summary and exits 0.
 */
import OpenAI from 'openai';
import { Ollama } from 'ollama';

const base = process.argv[2];
const kase = process.argv[3];
const field = process.argv[4] || 'reasoning';
const other = field === 'reasoning' ? 'reasoning_content' : 'reasoning';
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

const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-any',
    maxRetries: 0, timeout: 30000 });

const chatParams = { model: MODEL, messages: [{ role: 'user',
    content: 'think first' }], seed: 7, ignore_eos: true, prefill_ms: 0,
    tpot_ms: 0 };

async function openaiChat() {
	const s = await client.chat.completions.create({ ...chatParams,
	    reasoning_effort: 'low', max_tokens: 80, stream: true,
	    stream_options: { include_usage: true } });
	let think = '', text = '', nthink = 0, order = true, leak = false;
	let usage = null;
	for await (const c of s) {
		if (c.usage)
			usage = c.usage;
		if (c.choices.length === 0)
			continue;
		const d = c.choices[0].delta;
		if (other in d)
			leak = true;
		if (typeof d[field] === 'string') {
			if (text !== '')
				order = false;
			think += d[field];
			nthink++;
		}
		if (typeof d.content === 'string')
			text += d.content;
	}
	check(nthink > 0 && nthink <= 64 && think.length > 0,
	    `chat stream: ${nthink} ${field} deltas`);
	check(order && !leak && text.length > 0,
	    `chat stream: thinking before the content, no ${other}`);
	check(usage && usage.completion_tokens === 80 &&
	    usage.completion_tokens_details?.reasoning_tokens === 64,
	    `chat stream usage ${show(usage)}`);

	const a = await client.chat.completions.create({ ...chatParams,
	    reasoning_effort: 'low', max_tokens: 80 });
	const m = a.choices[0].message;
	check(m[field] === think && m.content === text && !(other in m),
	    `chat message: ${show(m)}`);
	check(a.usage.completion_tokens_details?.reasoning_tokens === 64,
	    `chat usage ${show(a.usage)}`);

	if (field === 'reasoning_content') {
		/* --reasoning always: medium, unasked */
		const b = await client.chat.completions.create({ ...chatParams,
		    max_tokens: 300 });
		check(b.usage.completion_tokens_details?.reasoning_tokens ===
		    256 && b.choices[0].message.reasoning_content.length > 0,
		    `always: ${show(b.usage)}`);
	}
}

async function openaiResponses() {
	const params = { model: MODEL, input: 'think first', seed: 7,
	    ignore_eos: true, max_output_tokens: 24, prefill_ms: 0,
	    tpot_ms: 0, reasoning: { effort: 'minimal' } };
	const r = await client.responses.create(params);
	const [rs, msg] = r.output;
	check(r.output.length === 2 && rs.type === 'reasoning' &&
	    msg.type === 'message', `output ${show(r.output)}`);
	check(rs.content?.[0]?.type === 'reasoning_text' &&
	    rs.content[0].text.length > 0 && rs.summary.length === 0,
	    `reasoning item ${show(rs)}`);
	check(r.output_text === msg.content[0].text &&
	    !r.output_text.includes(rs.content?.[0]?.text),
	    `output_text is the message's: ${show(r.output_text)}`);
	check(r.usage.output_tokens_details.reasoning_tokens === 16 &&
	    r.reasoning.effort === 'minimal', `usage ${show(r.usage)} ` +
	    `reasoning ${show(r.reasoning)}`);

	const types = [];
	let think = '', text = '', last = null;
	const s = await client.responses.create({ ...params, stream: true });
	for await (const ev of s) {
		types.push(ev.type);
		if (ev.type === 'response.reasoning_text.delta')
			think += ev.delta;
		if (ev.type === 'response.output_text.delta')
			text += ev.delta;
		if (ev.type === 'response.output_item.added')
			types.push(`${ev.item.type}@${ev.output_index}`);
		if (ev.type === 'response.incomplete' ||
		    ev.type === 'response.completed')
			last = ev.response;
	}
	const first = types.indexOf('response.reasoning_text.delta');
	const done = types.indexOf('response.reasoning_text.done');
	check(types[2] === 'response.output_item.added' &&
	    types[3] === 'reasoning@0' && first === 4 && done > first &&
	    types.indexOf('message@1') > done &&
	    types.indexOf('response.output_text.delta') > done,
	    `events ${show(types)}`);
	check(think === rs.content[0].text && text === r.output_text &&
	    last?.output?.[0]?.content?.[0]?.text === think,
	    `streamed thinking ${show(think)} vs ${show(rs)}`);

	/* summary: the SDK's accumulator sees the summary item */
	const st = client.responses.stream({ ...params,
	    reasoning: { effort: 'minimal', summary: 'auto' } });
	const seen = new Set();
	let sum = '';
	st.on('event', (ev) => seen.add(ev.type));
	st.on('response.reasoning_summary_text.delta', (ev) => {
		sum += ev.delta;
	});
	const fin = await st.finalResponse();
	check(seen.has('response.reasoning_summary_part.added') &&
	    seen.has('response.reasoning_summary_text.done') &&
	    seen.has('response.reasoning_summary_part.done') &&
	    !seen.has('response.reasoning_text.delta'),
	    `summary events ${show([...seen])}`);
	check(fin.output[0].type === 'reasoning' &&
	    fin.output[0].summary[0]?.text === sum && sum.length > 0,
	    `summary item ${show(fin.output[0])}`);
}

async function ollamaCase() {
	const ollama = new Ollama({ host: base });
	const msgs = [{ role: 'user', content: 'think first' }];
	const extra = { tpot_ms: 0, prefill_ms: 0 };
	let think = '', text = '', order = true, n = 0;
	const s = await ollama.chat({ model: MODEL, messages: msgs,
	    think: true, stream: true, options: { num_predict: 300, seed: 3 },
	    ...extra });
	for await (const p of s) {
		if (p.message.thinking) {
			if (text !== '')
				order = false;
			think += p.message.thinking;
			n++;
		}
		text += p.message.content;
	}
	check(n > 0 && n <= 256 && order && text.length > 0,
	    `chat stream: ${n} thinking parts, in order ${order}`);
	const a = await ollama.chat({ model: MODEL, messages: msgs,
	    think: true, stream: false, options: { num_predict: 300, seed: 3 },
	    ...extra });
	check(a.message.thinking === think && a.message.content === text,
	    `chat: ${show(a.message)}`);
	const g = await ollama.generate({ model: MODEL, prompt: 'think first',
	    think: 'low', stream: false, options: { num_predict: 70 },
	    ...extra });
	check(typeof g.thinking === 'string' && g.thinking.length > 0 &&
	    g.response.length > 0, `generate: ${show(g)}`);
	let gt = '';
	for await (const p of await ollama.generate({ model: MODEL,
	    prompt: 'think first', think: 'low', stream: true,
	    options: { num_predict: 70 }, ...extra }))
		gt += p.thinking || '';
	check(gt === g.thinking, `generate stream ${show(gt)}`);
	const f = await ollama.chat({ model: MODEL, messages: msgs,
	    think: false, stream: false, options: { num_predict: 20 },
	    ...extra });
	check(f.message.thinking === undefined, `think false: ${show(f)}`);
}

async function cancelCase() {
	const { data: s, response } = await client.chat.completions.create({
	    ...chatParams, reasoning_effort: 'high', max_tokens: 2000,
	    stream: true, tpot_ms: 1000 }).withResponse();
	const id = response.headers.get('x-request-id');
	let n = 0;
	for await (const c of s) {
		const d = c.choices[0]?.delta || {};
		if (!check(typeof d.content !== 'string' || d.content === '',
		    `content before 3 reasoning deltas: ${show(c)}`))
			break;
		if (typeof d.reasoning === 'string' && ++n === 3)
			break;  /* the SDK aborts the request */
	}
	check(n === 3, `${n} reasoning deltas`);
	console.log(`id ${id}`);
}

async function main() {
	if (kase === 'openai') {
		await openaiChat();
		await openaiResponses();
	} else if (kase === 'ollama') {
		await ollamaCase();
	} else if (kase === 'cancel') {
		await cancelCase();
	} else {
		check(false, `unknown case ${kase}`);
	}
}

main().then(() => {
	for (const f of failures)
		console.log(`FAIL: ${f}`);
	console.log(`${checks - failures.length}/${checks} checks passed`);
	process.exit(failures.length > 0 ? 1 : 0);
}, (e) => {
	console.log(`FAIL: ${e.stack || e}`);
	process.exit(1);
});
