#!/usr/bin/env node
/*
 * ai-sdk-anthropic.mjs BASE - the Vercel AI SDK's Anthropic provider
 * ("ai" with "@ai-sdk/anthropic", createAnthropic({ baseURL: BASE/v1 }))
 * against tokstream's Messages API (POST /v1/messages) through lighttpd:
 *   - generateText: the text, finishReason, usage against
 *     /_debug/generated (X-Request-Id), response.id "msg_...";
 *   - streamText with thinking (providerOptions.anthropic.thinking
 *     {type: 'enabled', budgetTokens}): the body carries Anthropic's
 *     thinking object; reasoning-delta parts come before the first
 *     text-delta, their text is result.reasoningText, the reasoning part
 *     has the block's signature; the streamed text is the non-stream text
 *     of the same request; usage agrees with /_debug/generated;
 *   - a tool call: generateText with a tool (jsonSchema) and toolChoice
 *     'required' (Anthropic's tool_choice any): one call of that tool,
 *     its input an object with the schema's required property,
 *     finishReason 'tool-calls'.
 * tokstream's latency knobs (prefill_ms, tpot_ms) go in through a custom
 * fetch, which also records the body sent and the X-Request-Id.
 *
 * Text blocks carry no "citations" (Anthropic's service leaves the field
 * out when there are none; @ai-sdk/anthropic 2.0.x refuses a null one
 * with "Invalid JSON response", which tokstream sent until 2026-12-06).
 * Against
 * a server without /v1/messages every call fails (404). Prints "FAIL:
 * ..." lines and exits 1, or one "ok: ..." line and exits 0.
 */
import { readFileSync } from 'node:fs';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, jsonSchema, streamText } from 'ai';

const base = process.argv[2] || process.env.BASE;
const MODEL = 'tokstream-sim';
const FAST = { prefill_ms: 0, tpot_ms: 1 };
const failures = [];
let checks = 0;

globalThis.AI_SDK_LOG_WARNINGS = false;

function check(ok, what) {
	checks++;
	if (!ok)
		failures.push(what);
	return ok;
}

const show = (v) => JSON.stringify(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function version(pkg) {
	const url = new URL(`./node_modules/${pkg}/package.json`,
	    import.meta.url);
	return `${pkg} ${JSON.parse(readFileSync(url, 'utf8')).version}`;
}

/* /_debug/generated?id=ID once the sequence has ended */
async function generated(id) {
	let d;
	for (let i = 0; i < 500; i++) {
		d = await (await fetch(`${base}/_debug/generated?id=${id}`))
		    .json();
		if (d.status !== 'running')
			return d;
		await sleep(20);
	}
	return d;
}

/* a provider whose requests add tokstream's knobs and are recorded */
function provider(rec) {
	return createAnthropic({
		baseURL: `${base}/v1`,
		apiKey: 'sk-ant-tokstream-any-key',
		fetch: async (url, init) => {
			const body = { ...JSON.parse(init.body), ...FAST };
			rec.url = String(url);
			rec.body = body;
			rec.headers = new Headers(init.headers);
			const res = await fetch(url, { ...init,
			    body: JSON.stringify(body) });
			rec.requestId = res.headers.get('x-request-id');
			return res;
		},
	});
}

/* usage as the SDK gives it is /_debug/generated's count */
async function usageAgrees(what, rec, usage) {
	const d = await generated(rec.requestId);
	check(usage?.outputTokens === d.generated, `${what}: usage ` +
	    `${show(usage)}, /_debug/generated ${d.generated}`);
	check(usage?.inputTokens > 0, `${what}: inputTokens ` +
	    `${usage?.inputTokens}`);
}

function sentTo(what, rec) {
	check(rec.url === `${base}/v1/messages`, `${what}: POST ${rec.url}`);
	check(rec.headers.get('x-api-key') === 'sk-ant-tokstream-any-key' &&
	    rec.headers.get('anthropic-version') !== null,
	    `${what}: headers x-api-key / anthropic-version missing`);
}

async function plainText() {
	const rec = {};
	const g = await generateText({ model: provider(rec)(MODEL),
	    prompt: 'What is a token?', maxOutputTokens: 12, maxRetries: 0 });
	sentTo('generateText', rec);
	check(g.text.length > 0, `generateText: empty text`);
	check(['length', 'stop'].includes(g.finishReason),
	    `generateText: finishReason ${g.finishReason}`);
	check(/^msg_/.test(g.response.id), `generateText: response.id ` +
	    `${g.response.id}`);
	check(g.warnings.length === 0, `generateText: warnings ` +
	    show(g.warnings));
	await usageAgrees('generateText', rec, g.usage);
}

async function thinkingStream() {
	const thinking = { type: 'enabled', budgetTokens: 4 };
	const args = (rec) => ({ model: provider(rec)(MODEL),
	    prompt: 'Think, then answer: why stream tokens?',
	    maxOutputTokens: 16, maxRetries: 0,
	    providerOptions: { anthropic: { thinking } } });
	const rec = {};
	const errors = [];
	const s = streamText({ ...args(rec),
	    onError: ({ error }) => errors.push(error) });
	const order = [];
	let text = '', reasoning = '';
	for await (const p of s.fullStream) {
		if (p.type === 'reasoning-delta') {
			reasoning += p.text;
			order.push('r');
		} else if (p.type === 'text-delta') {
			text += p.text;
			order.push('t');
		}
	}
	sentTo('streamText thinking', rec);
	check(errors.length === 0, `streamText thinking: errors ` +
	    errors.map((e) => e?.stack ?? e));
	check(rec.body?.thinking?.type === 'enabled' &&
	    rec.body.thinking.budget_tokens === 4, `streamText thinking: ` +
	    `body.thinking ${show(rec.body?.thinking)}`);
	const firstText = order.indexOf('t');
	check(order[0] === 'r' && firstText > 0 &&
	    !order.slice(firstText).includes('r'), `streamText thinking: ` +
	    `reasoning then text, got ${order.join('')}`);
	check(reasoning.length > 0 && reasoning === await s.reasoningText,
	    `streamText thinking: reasoning ${show(reasoning)}, ` +
	    `reasoningText ${show(await s.reasoningText)}`);
	const parts = await s.reasoning;
	const sig = parts?.[0]?.providerMetadata?.anthropic?.signature;
	check(typeof sig === 'string' && sig.length > 0, `streamText ` +
	    `thinking: no signature in ${show(parts)}`);
	check(text.length > 0 && text === await s.text, `streamText ` +
	    `thinking: text ${show(text)}`);
	await usageAgrees('streamText thinking', rec, await s.usage);
	/* the same request without streaming: the same thinking and text */
	const rec2 = {};
	const g = await generateText(args(rec2));
	check(g.text === text && g.reasoningText === reasoning,
	    `generateText thinking: ${show([g.reasoningText, g.text])} vs ` +
	    `the stream's ${show([reasoning, text])}`);
}

async function toolCall() {
	const rec = {};
	const g = await generateText({ model: provider(rec)(MODEL),
	    prompt: 'What is the weather in Paris?', maxOutputTokens: 200,
	    maxRetries: 0, toolChoice: 'required',
	    tools: { get_weather: { description: 'The weather in a city',
		inputSchema: jsonSchema({ type: 'object',
		    properties: { city: { type: 'string' } },
		    required: ['city'], additionalProperties: false }) } } });
	sentTo('tool call', rec);
	check(rec.body?.tool_choice?.type === 'any', `tool call: ` +
	    `tool_choice ${show(rec.body?.tool_choice)}`);
	check(g.toolCalls.length === 1 &&
	    g.toolCalls[0].toolName === 'get_weather' &&
	    typeof g.toolCalls[0].input?.city === 'string' &&
	    /^toolu_/.test(g.toolCalls[0].toolCallId), `tool call: ` +
	    show(g.toolCalls));
	check(g.finishReason === 'tool-calls', `tool call: finishReason ` +
	    g.finishReason);
	await usageAgrees('tool call', rec, g.usage);
}

async function main() {
	for (const f of [plainText, thinkingStream, toolCall]) {
		try {
			await f();
		} catch (err) {
			check(false, `${f.name}: exception: ${err?.stack || err}` +
			    (err?.cause ? ` (cause: ${err.cause?.message ??
			    err.cause}; body ${err.responseBody})` : ''));
		}
	}
	if (failures.length > 0) {
		for (const f of failures)
			console.log(`FAIL: ${f}`);
		process.exit(1);
	}
	console.log(`ok: ${version('ai')}, ${version('@ai-sdk/anthropic')} ` +
	    `against ${base}/v1/messages, ${checks} checks`);
}

if (!base || !URL.canParse(base)) {
	console.log('usage: ai-sdk-anthropic.mjs BASE (e.g. ' +
	    'http://127.0.0.1:8170)');
	process.exit(2);
}
main();
