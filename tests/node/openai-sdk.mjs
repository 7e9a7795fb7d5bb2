#!/usr/bin/env node
/*
 * openai-sdk.mjs BASE - the official OpenAI client for JavaScript (npm
 * "openai") against tokstream through lighttpd: baseURL BASE/v1, any API
 * key. What an application written for OpenAI sees:
 *   - models.list() names the served model;
 *   - chat.completions.create and completions.create, without and with
 *     stream (stream_options.include_usage): text, finish_reason and
 *     usage; the streamed deltas joined equal the non-stream text, and
 *     both equal tokgen's offline run of the same model (TOKGEN);
 *   - the SDK's own accumulator (chat.completions.stream() and
 *     finalChatCompletion()) gives the same message;
 *   - seed, stop strings, EOS ("stop") and max_tokens ("length");
 *   - usage.prompt_tokens is the chat template's count, completion_tokens
 *     the tokens generated (tokgen --ids, /_debug/generated);
 *   - errors arrive as the SDK's typed errors with status, code, param
 *     and type; an error event after the stream began is thrown by the
 *     stream's iterator;
 *   - aborting a stream (controller.abort()) cancels the generation.
 * X-Request-Id is the SDK's _request_id. Prints one line per failure and
 * exits 1, or a summary and exits 0.
 */
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';
import { VERSION } from 'openai/version';

const baseArg = process.argv[2] || process.env.BASE;
const TOKGEN = process.env.TOKGEN;
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
/* usage without prompt_tokens_details (the prefix cache's share) */
const counts = (u) => u && { prompt_tokens: u.prompt_tokens,
	completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };

/* tokgen's output for the same model: the text (raw bytes as UTF-8) */
function tokgen(args) {
	return execFileSync(TOKGEN, args, { encoding: 'utf8' });
}

function tokgenIds(args) {
	return tokgen([...args, '--ids']).split('\n').filter((l) => l !== '')
	    .length;
}

async function debug(id) {
	const res = await fetch(`${baseArg}/_debug/generated?id=${id}`);
	return res.json();
}

async function debugWhenDone(id) {
	let d;
	for (let i = 0; i < 250; i++) {
		d = await debug(id);
		if (d.status !== 'running')
			return d;
		await sleep(20);
	}
	return d;
}

const client = new OpenAI({
	baseURL: `${baseArg}/v1`,
	apiKey: 'sk-tokstream-any-key',
	maxRetries: 0,            /* a 500 or 429 must show, not be retried */
	timeout: 20000,
});

/* Joins a chat stream: text, finish_reason, usage, role placement. */
async function readChatStream(stream) {
	const r = { text: '', finish: null, usage: null, chunks: 0,
	    roles: [], ids: new Set() };

	for await (const chunk of stream) {
		r.ids.add(chunk.id);
		if (chunk.usage)
			r.usage = chunk.usage;
		const c = chunk.choices[0];
		if (!c)
			continue;           /* the usage chunk: choices [] */
		r.chunks++;
		if (c.delta?.role)
			r.roles.push(r.chunks);
		r.text += c.delta?.content ?? '';
		if (c.finish_reason)
			r.finish = c.finish_reason;
	}
	return r;
}

async function readCompletionStream(stream) {
	const r = { text: '', finish: null, usage: null };

	for await (const chunk of stream) {
		if (chunk.usage)
			r.usage = chunk.usage;
		const c = chunk.choices[0];
		if (!c)
			continue;
		r.text += c.text;
		if (c.finish_reason)
			r.finish = c.finish_reason;
	}
	return r;
}

/*
 * One chat request both ways; checks each against the other and against
 * tokgen (args: tokgen's options for the same request).
 */
async function chatBothWays(name, params, tg) {
	const { data: full, response } = await client.chat.completions
	    .create(params).withResponse();
	const id = response.headers.get('x-request-id');
	check(full._request_id === id && /^[1-9][0-9]*$/.test(id),
	    `${name}: _request_id ${full._request_id}, X-Request-Id ${id}`);
	check(full.id === `chatcmpl-${id}` && full.object ===
	    'chat.completion' && full.model === MODEL,
	    `${name}: id/object/model ${full.id} ${full.object} ${full.model}`);
	const msg = full.choices[0].message;
	check(msg.role === 'assistant' && typeof msg.content === 'string',
	    `${name}: message ${show(msg)}`);
	const want = tokgen(tg);
	check(msg.content === want, `${name}: content differs from ` +
	    `tokgen's:\n  got  ${show(msg.content)}\n  want ${show(want)}`);
	const u = full.usage;
	const prompt = Number(tokgen([...tg, '--count']));
	const ids = tokgenIds(tg);
	check(u.prompt_tokens === prompt && u.completion_tokens === ids &&
	    u.total_tokens === prompt + ids, `${name}: usage ${show(u)}, ` +
	    `want prompt ${prompt}, completion ${ids}`);
	const dbg = await debugWhenDone(id);
	check(dbg.generated === u.completion_tokens && dbg.status === 'done',
	    `${name}: /_debug/generated ${show(dbg)} vs usage ${show(u)}`);

	const stream = await client.chat.completions.create({ ...params,
	    stream: true, stream_options: { include_usage: true } });
	const s = await readChatStream(stream);
	check(s.text === msg.content, `${name}: streamed text differs:\n` +
	    `  stream ${show(s.text)}\n  whole  ${show(msg.content)}`);
	check(s.finish === full.choices[0].finish_reason,
	    `${name}: stream finish ${s.finish}, whole ` +
	    `${full.choices[0].finish_reason}`);
	/* the same counts; cached_tokens differ (the second request finds
	 * the first's prompt in the prefix cache) */
	check(show(counts(s.usage)) === show(counts(u)), `${name}: stream usage ` +
	    `${show(s.usage)}, whole ${show(u)}`);
	check(s.roles.length === 1 && s.roles[0] === 1,
	    `${name}: role in chunks ${show(s.roles)}, want only the first`);
	check(s.ids.size === 1, `${name}: chunk ids ${show([...s.ids])}`);

	/* the SDK's accumulating helper */
	const helper = client.chat.completions.stream({ ...params,
	    stream_options: { include_usage: true } });
	let deltas = '';
	helper.on('content', (delta) => { deltas += delta; });
	const fin = await helper.finalChatCompletion();
	check(fin.choices[0].message.content === msg.content &&
	    deltas === msg.content &&
	    fin.choices[0].finish_reason === full.choices[0].finish_reason,
	    `${name}: chat.completions.stream() gave ` +
	    `${show(fin.choices[0])}, deltas ${show(deltas)}`);
	return { full, stream: s };
}

async function completionBothWays(name, params, tg) {
	const full = await client.completions.create(params);
	const want = tokgen(tg);
	check(full.object === 'text_completion' &&
	    full.choices[0].text === want, `${name}: text ` +
	    `${show(full.choices[0].text)}, want ${show(want)}`);
	const stream = await client.completions.create({ ...params,
	    stream: true, stream_options: { include_usage: true } });
	const s = await readCompletionStream(stream);
	check(s.text === full.choices[0].text, `${name}: streamed text ` +
	    `${show(s.text)}, whole ${show(full.choices[0].text)}`);
	check(s.finish === full.choices[0].finish_reason,
	    `${name}: finish ${s.finish} vs ${full.choices[0].finish_reason}`);
	check(show(counts(s.usage)) === show(counts(full.usage)), `${name}: usage ` +
	    `${show(s.usage)} vs ${show(full.usage)}`);
	return full;
}

/* expects the request to throw an APIError of that class and status */
async function expectError(name, fn, cls, status, code, param) {
	try {
		await fn();
		check(false, `${name}: no error`);
	} catch (e) {
		check(e instanceof cls && e.status === status &&
		    e.code === code && e.param === param &&
		    typeof e.type === 'string' && e.message.length > 10,
		    `${name}: got ${e?.constructor?.name} status ${e?.status} ` +
		    `code ${e?.code} param ${e?.param} type ${e?.type}: ` +
		    `${e?.message}`);
	}
}

async function main() {
	const fast = { prefill_ms: 0, tpot_ms: 1 };   /* tokstream's knobs */
	const user = (content) => [{ role: 'user', content }];

	/* models */
	const models = await client.models.list();
	check(models.data.length === 1 && models.data[0].id === MODEL &&
	    models.data[0].object === 'model', `models.list(): ` +
	    show(models.data));

	/* chat: ended by EOS, by max_tokens, with a seed, with a stop */
	const eos = await chatBothWays('chat EOS', { model: MODEL,
	    messages: user('tell me a story'), max_tokens: 1000, ...fast },
	    ['--chat', '-p', 'tell me a story', '-n', '1000']);
	check(eos.full.choices[0].finish_reason === 'stop',
	    `chat EOS: finish_reason ${eos.full.choices[0].finish_reason}`);
	const len = await chatBothWays('chat length', { model: MODEL,
	    messages: [{ role: 'system', content: 'Be brief.' },
	    ...user('utf8')], max_tokens: 300, ignore_eos: true, ...fast },
	    ['--chat', '--system', 'Be brief.', '-p', 'utf8', '-n', '300',
	    '--ignore-eos']);
	check(len.full.choices[0].finish_reason === 'length' &&
	    len.full.usage.completion_tokens === 300,
	    `chat length: ${show(len.full.choices[0].finish_reason)} ` +
	    show(len.full.usage));
	check(/[^\x00-\x7f]/.test(len.full.choices[0].message.content),
	    'chat length: no non-ASCII text in 300 tokens');
	await chatBothWays('chat seed', { model: MODEL, messages: user('hi'),
	    max_tokens: 40, seed: 12345, temperature: 0.8, top_p: 0.9,
	    ...fast }, ['--chat', '-p', 'hi', '-n', '40', '--seed', '12345',
	    '--temperature', '0.8', '--top-p', '0.9']);
	const other = await client.chat.completions.create({ model: MODEL,
	    messages: user('hi'), max_tokens: 40, seed: 54321,
	    temperature: 0.8, top_p: 0.9, ...fast });
	const same = await client.chat.completions.create({ model: MODEL,
	    messages: user('hi'), max_tokens: 40, seed: 12345,
	    temperature: 0.8, top_p: 0.9, ...fast });
	check(other.choices[0].message.content !==
	    same.choices[0].message.content, 'seeds 12345 and 54321 gave ' +
	    'the same text');
	/* a stop string taken from the middle of the EOS answer */
	const story = eos.full.choices[0].message.content;
	let cut = Math.floor(story.length / 2);
	while (cut < story.length && !/^[ -~]{5}$/.test(story.slice(cut,
	    cut + 5)))
		cut++;
	const stop = story.slice(cut, cut + 5);
	check(stop.length === 5, `no ASCII stop string in ${show(story)}`);
	const st = await chatBothWays('chat stop', { model: MODEL,
	    messages: user('tell me a story'), max_tokens: 1000,
	    stop: [stop], ...fast }, ['--chat', '-p', 'tell me a story',
	    '-n', '1000', '--stop', stop]);
	const content = st.full.choices[0].message.content;
	check(st.full.choices[0].finish_reason === 'stop' &&
	    !content.includes(stop) && story.startsWith(content) &&
	    content.length === story.indexOf(stop), `chat stop ` +
	    `${show(stop)}: ${show(content)} (${st.full.choices[0]
		.finish_reason})`);

	/* completions */
	const c1 = await completionBothWays('completion length', { model:
	    MODEL, prompt: 'hello', max_tokens: 50, ignore_eos: true,
	    ...fast }, ['--lm', '-p', 'hello', '-n', '50', '--ignore-eos']);
	check(c1.choices[0].finish_reason === 'length' &&
	    c1.usage.completion_tokens === 50, `completion length: ` +
	    show(c1));
	const c2 = await completionBothWays('completion EOS', { model: MODEL,
	    prompt: 'hello', max_tokens: 1000, ...fast },
	    ['--lm', '-p', 'hello', '-n', '1000']);
	check(c2.choices[0].finish_reason === 'stop' &&
	    c2.usage.completion_tokens < 1000, `completion EOS: ` +
	    show(c2.usage));

	/* errors, typed by the SDK */
	await expectError('temperature 3', () => client.chat.completions
	    .create({ model: MODEL, messages: user('hi'), temperature: 3 }),
	    OpenAI.BadRequestError, 400, 'decimal_above_max_value',
	    'temperature');
	await expectError('n 17', () => client.chat.completions.create({
	    model: MODEL, messages: user('hi'), n: 17 }),
	    OpenAI.BadRequestError, 400, 'integer_above_max_value', 'n');
	await expectError('unknown model', () => client.chat.completions
	    .create({ model: 'gpt-4o', messages: user('hi') }),
	    OpenAI.NotFoundError, 404, 'model_not_found', null);
	await expectError('completion 500', () => client.completions.create({
	    model: MODEL, prompt: 'x', max_tokens: 10, error_after: 2,
	    ...fast }), OpenAI.InternalServerError, 500, 'injected_error',
	    null);
	/* an error event after the stream began: thrown by the iterator,
	 * after the tokens before it */
	let got = '';
	try {
		const s = await client.chat.completions.create({ model: MODEL,
		    messages: user('hi'), max_tokens: 10, error_after: 3,
		    stream: true, ...fast });
		for await (const chunk of s)
			got += chunk.choices[0]?.delta?.content ?? '';
		check(false, 'stream with error_after: no error thrown');
	} catch (e) {
		const want = tokgen(['--chat', '-p', 'hi', '-n', '3']);
		check(e instanceof OpenAI.APIError && e.code ===
		    'injected_error' && got === want, `stream error: ` +
		    `${e?.constructor?.name} ${e?.code} after ${show(got)}, ` +
		    `want ${show(want)}`);
	}

	/* leaving a stream: the SDK's abort cancels the generation */
	const { data: s, response } = await client.chat.completions.create({
	    model: MODEL, messages: user('leave'), max_tokens: 200,
	    ignore_eos: true, stream: true, prefill_ms: 0, tpot_ms: 20 })
	    .withResponse();
	const id = response.headers.get('x-request-id');
	let n = 0;
	for await (const chunk of s) {
		if (chunk.choices[0]?.delta?.content && ++n === 5)
			s.controller.abort();
	}
	const d = await debugWhenDone(id);
	check(d.status === 'cancelled' && d.finish_reason === 'abort' &&
	    d.generated <= n + 4, `abort after ${n} chunks: ${show(d)}`);

	if (failures.length > 0) {
		for (const f of failures)
			console.log(`FAIL: ${f}`);
		process.exit(1);
	}
	console.log(`ok: openai ${VERSION} against ${baseArg}/v1, ` +
	    `${checks} checks`);
}

if (!baseArg || !URL.canParse(baseArg) || !TOKGEN) {
	console.log('usage: TOKGEN=path/to/tokgen openai-sdk.mjs BASE ' +
	    '(e.g. http://127.0.0.1:8170)');
	process.exit(2);
}
main().catch((err) => {
	console.log(`FAIL: exception: ${err?.stack || err}`);
	for (const f of failures)
		console.log(`FAIL: ${f}`);
	process.exit(1);
});
