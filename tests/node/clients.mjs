#!/usr/bin/env node
/*
 * clients.mjs BASE [LIBRARY...] - three third-party JavaScript client
 * libraries that people point at OpenAI-compatible servers, against
 * tokstream's /v1 endpoints through lighttpd (baseURL BASE/v1, any key):
 *   ai-sdk       the Vercel AI SDK ("ai" with "@ai-sdk/openai"):
 *                generateText and streamText over openai(model), which is
 *                POST /v1/responses in this version, and over
 *                openai.chat(model), POST /v1/chat/completions;
 *   langchain    LangChain JS ("@langchain/openai" ChatOpenAI on
 *                "@langchain/core"): invoke and stream (streamUsage);
 *   huggingface  Hugging Face's "@huggingface/inference" InferenceClient
 *                with endpointUrl: chatCompletion, chatCompletionStream.
 * Without LIBRARY, all three. For each, the same plan of requests, all
 * with a fixed seed and the default temperature (tokstream is
 * deterministic):
 *   - streaming: the text joined from the library's deltas is the
 *     non-stream text of the same request; finish reason and usage agree;
 *     the text has non-ASCII characters, so UTF-8 decoding is checked too;
 *   - usage as the library exposes it: completion tokens equal
 *     "generated" in /_debug/generated?id=X, prompt tokens its
 *     "prompt_tokens" (X: the X-Request-Id header where the library shows
 *     it, otherwise the id inside "chatcmpl-X" / "resp_X");
 *   - finish reasons: natural EOS and a stop string give the library's
 *     "stop", a small max_tokens its "length" (and a prefix of the EOS
 *     text: token k does not depend on max_tokens);
 *   - keep-alive: a prefill longer than --keepalive-ms (clients.bats
 *     starts the server with 500) puts ": keep-alive" comments before the
 *     first event, and newlines before a non-stream JSON body; the library
 *     must give the same text as without them;
 *   - abort: an AbortController aborts the stream after 5 text deltas;
 *     /_debug/generated then says cancelled, finish_reason abort, at most
 *     5 + 6 tokens generated.
 * tokstream's own fields (prefill_ms, tpot_ms, ignore_eos) are extra body
 * fields: a custom fetch for the AI SDK (it has no way to add fields to
 * the body), modelKwargs for LangChain, extra arguments for Hugging Face.
 * Prints one "FAIL: ..." line per failure and exits 1, or one "ok: ..."
 * line per library and exits 0.
 */
import { readFileSync } from 'node:fs';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import { ChatOpenAI } from '@langchain/openai';
import { InferenceClient } from '@huggingface/inference';

const baseArg = process.argv[2] || process.env.BASE;
const MODEL = 'tokstream-sim';
const API_KEY = 'sk-tokstream-any-key';
const LIBRARIES = ['ai-sdk', 'langchain', 'huggingface'];
const failures = [];
let checks = 0;

/* the AI SDK prints its warnings; they are checked below instead */
globalThis.AI_SDK_LOG_WARNINGS = false;

function check(ok, what) {
	checks++;
	if (!ok)
		failures.push(what);
	return ok;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const show = (v) => JSON.stringify(v);

function version(pkg) {
	const url = new URL(`./node_modules/${pkg}/package.json`,
	    import.meta.url);
	return `${pkg} ${JSON.parse(readFileSync(url, 'utf8')).version}`;
}

async function debug(id) {
	const res = await fetch(`${baseArg}/_debug/generated?id=${id}`);
	return res.json();
}

async function debugWhenDone(id) {
	let d;
	for (let i = 0; i < 500; i++) {
		d = await debug(id);
		if (d.status !== 'running')
			return d;
		await sleep(20);
	}
	return d;
}

/* "chatcmpl-12" or "resp_12" -> "12"; anything else -> null */
function idOf(responseId) {
	const m = /^(?:chatcmpl-|resp_)([1-9][0-9]*)$/.exec(responseId ?? '');
	return m ? m[1] : null;
}

/* the fields that make a request fast, and the slow abort stream's */
const FAST = { prefill_ms: 0, tpot_ms: 1 };
const ABORT = { prefill_ms: 0, tpot_ms: 20, ignore_eos: true };
const ABORT_AFTER = 5;
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/*
 * A driver runs one request the library's way. req: { prompt, maxTokens,
 * seed, stop (array or undefined), extra (tokstream's fields) }.
 *   whole(req)  -> { text, finish, usage: { prompt, completion, total },
 *                    id (the X of /_debug) }
 *   stream(req) -> the same and deltas (the text deltas seen)
 *   abort(req)  -> { id, deltas, ok (the library ended as it should),
 *                    how (what it did) }
 * finish: the library's names for OpenAI's "stop" and "length".
 */

/* ---- the Vercel AI SDK ---- */

/*
 * The AI SDK builds the body itself, so tokstream's fields go in through
 * a custom fetch (createOpenAI's fetch option), which also records what
 * was sent and the X-Request-Id of the answer.
 */
function aiProvider(extra, rec) {
	return createOpenAI({
		baseURL: `${baseArg}/v1`,
		apiKey: API_KEY,
		fetch: async (url, init) => {
			const body = { ...JSON.parse(init.body), ...extra };
			rec.url = String(url);
			rec.body = body;
			const res = await fetch(url, { ...init,
			    body: JSON.stringify(body) });
			rec.requestId = res.headers.get('x-request-id');
			return res;
		},
	});
}

function aiDriver(api) {
	const chat = api === 'chat';
	const path = chat ? '/v1/chat/completions' : '/v1/responses';
	const prefix = chat ? 'chatcmpl-' : 'resp_';
	const name = `ai-sdk ${chat ? 'openai.chat()' : 'openai()'}`;
	const undiciMayKeepOpen = true;     /* see the abort check */

	/*
	 * The AI SDK's Responses model does not send seed and stopSequences
	 * (it warns "unsupported-setting": OpenAI's Responses API has neither);
	 * tokstream takes both there, so they go as extra body fields.
	 */
	function call(req, rec, signal) {
		const extra = chat ? req.extra : { ...req.extra,
		    seed: req.seed, ...(req.stop ? { stop: req.stop } : {}) };
		const provider = aiProvider(extra, rec);
		return {
			model: chat ? provider.chat(MODEL) : provider(MODEL),
			prompt: req.prompt,
			maxOutputTokens: req.maxTokens,
			...(chat ? { seed: req.seed, stopSequences: req.stop } :
			    {}),
			maxRetries: 0,
			...(signal ? { abortSignal: signal } : {}),
		};
	}

	function sent(what, rec, req) {
		check(rec.url === `${baseArg}${path}`, `${name} ${what}: ` +
		    `POST ${rec.url}, want ${path}`);
		check(rec.body?.seed === req.seed, `${name} ${what}: body ` +
		    `has no seed ${req.seed}: ${show(rec.body)}`);
	}

	const usage = (u) => ({ prompt: u?.inputTokens,
	    completion: u?.outputTokens, total: u?.totalTokens });

	return {
		name,
		path,
		undiciMayKeepOpen,
		finish: { stop: 'stop', length: 'length' },
		async whole(req, what) {
			const rec = {};
			const g = await generateText(call(req, rec));
			sent(what, rec, req);
			check(g.response.id === `${prefix}${rec.requestId}` &&
			    g.response.headers?.['x-request-id'] ===
			    rec.requestId, `${name} ${what}: response.id ` +
			    `${g.response.id}, X-Request-Id ${rec.requestId}`);
			check(g.warnings.length === 0, `${name} ${what}: ` +
			    `warnings ${show(g.warnings)}`);
			return { text: g.text, finish: g.finishReason,
			    usage: usage(g.usage), id: rec.requestId };
		},
		async stream(req, what) {
			const rec = {};
			const errors = [];
			const s = streamText({ ...call(req, rec),
			    onError: ({ error }) => errors.push(error) });
			let text = '';
			let deltas = 0;
			for await (const p of s.fullStream) {
				if (p.type === 'text-delta') {
					text += p.text;
					deltas++;
				}
			}
			sent(`${what} stream`, rec, req);
			check(errors.length === 0, `${name} ${what} stream: ` +
			    `errors ${errors.map((e) => e?.stack ?? e)}`);
			const res = await s.response;
			check(res.id === `${prefix}${rec.requestId}`,
			    `${name} ${what} stream: response.id ${res.id}, ` +
			    `X-Request-Id ${rec.requestId}`);
			return { text, finish: await s.finishReason,
			    usage: usage(await s.usage), id: rec.requestId,
			    deltas };
		},
		async abort(req) {
			const rec = {};
			const ac = new AbortController();
			const types = [];
			const errors = [];
			const s = streamText({ ...call(req, rec, ac.signal),
			    onError: ({ error }) => errors.push(error) });
			let deltas = 0;
			for await (const p of s.fullStream) {
				types.push(p.type);
				if (p.type === 'text-delta' &&
				    ++deltas === ABORT_AFTER)
					ac.abort();
			}
			/* the AI SDK ends fullStream with an "abort" part */
			return { id: rec.requestId, deltas,
			    ok: types.at(-1) === 'abort' && errors.length === 0,
			    how: `parts ${show(types.slice(-3))}, errors ` +
			    show(errors.map((e) => `${e?.name}: ${e?.message}`)) };
		},
	};
}

/* ---- LangChain ---- */

function langchainDriver() {
	const name = 'langchain ChatOpenAI';
	const undiciMayKeepOpen = true;     /* see the abort check */

	/* maxTokens and modelKwargs are the model's; seed and stop the call's */
	function model(req) {
		return new ChatOpenAI({
			model: MODEL,
			apiKey: API_KEY,
			configuration: { baseURL: `${baseArg}/v1` },
			maxRetries: 0,
			maxTokens: req.maxTokens,
			modelKwargs: req.extra,
		});
	}

	const options = (req, signal) => ({ seed: req.seed,
	    ...(req.stop ? { stop: req.stop } : {}),
	    ...(signal ? { signal } : {}) });
	const usage = (u) => ({ prompt: u?.input_tokens,
	    completion: u?.output_tokens, total: u?.total_tokens });

	return {
		undiciMayKeepOpen,
		name,
		path: '/v1/chat/completions',
		finish: { stop: 'stop', length: 'length' },
		async whole(req, what) {
			const m = await model(req).invoke(req.prompt,
			    options(req));
			const tu = m.response_metadata?.tokenUsage;
			const u = usage(m.usage_metadata);
			check(tu?.promptTokens === u.prompt &&
			    tu?.completionTokens === u.completion,
			    `${name} ${what}: tokenUsage ${show(tu)} vs ` +
			    `usage_metadata ${show(m.usage_metadata)}`);
			check(typeof m.content === 'string', `${name} ${what}: ` +
			    `content ${show(m.content)}`);
			return { text: m.content,
			    finish: m.response_metadata?.finish_reason,
			    usage: u, id: idOf(m.id) };
		},
		async stream(req, what) {
			const ids = new Set();
			let agg;
			let deltas = 0;
			for await (const c of await model(req).stream(req.prompt,
			    options(req))) {
				if (c.id)
					ids.add(c.id);
				if (c.content !== '')
					deltas++;
				agg = agg ? agg.concat(c) : c;
			}
			check(ids.size === 1, `${name} ${what} stream: chunk ` +
			    `ids ${show([...ids])}`);
			return { text: agg?.content,
			    finish: agg?.response_metadata?.finish_reason,
			    usage: usage(agg?.usage_metadata),
			    id: idOf([...ids][0]), deltas };
		},
		async abort(req) {
			const ac = new AbortController();
			let id = null;
			let deltas = 0;
			let err = null;
			try {
				for await (const c of await model(req).stream(
				    req.prompt, options(req, ac.signal))) {
					id ??= c.id;
					if (c.content !== '' &&
					    ++deltas === ABORT_AFTER)
						ac.abort();
				}
			} catch (e) {
				err = e;
			}
			/* LangChain's stream throws: an AbortError on Node 20,
			 * Error("Aborted") on Debian 12's Node 18 */
			return { id: idOf(id), deltas,
			    ok: err?.name === 'AbortError' ||
			    /^abort/i.test(String(err?.message)),
			    how: err ? `threw ${err.name}: ${err.message}` :
			    'ended without an error' };
		},
	};
}

/* ---- Hugging Face ---- */

function huggingfaceDriver() {
	const name = 'huggingface InferenceClient';
	/* any key that does not start with "hf_" is sent as the provider's */
	const hf = new InferenceClient(API_KEY, {
	    endpointUrl: `${baseArg}/v1` });
	/* its default retries a 503 forever: a 503 must show */
	const opts = { retry_on_error: false };

	/* every argument but the client's own goes into the body */
	const args = (req) => ({ model: MODEL,
	    messages: [{ role: 'user', content: req.prompt }],
	    max_tokens: req.maxTokens, seed: req.seed,
	    ...(req.stop ? { stop: req.stop } : {}), ...req.extra });
	const usage = (u) => ({ prompt: u?.prompt_tokens,
	    completion: u?.completion_tokens, total: u?.total_tokens });

	/* the chunks: text, finish_reason, usage (include_usage), ids */
	async function read(stream, onDelta) {
		const r = { text: '', finish: null, usage: null, deltas: 0,
		    ids: new Set() };
		for await (const c of stream) {
			r.ids.add(c.id);
			if (c.usage)
				r.usage = c.usage;
			const ch = c.choices?.[0];
			if (ch?.finish_reason)
				r.finish = ch.finish_reason;
			if (ch?.delta?.content) {
				r.text += ch.delta.content;
				r.deltas++;
				onDelta?.(r.deltas);
			}
		}
		return r;
	}

	return {
		name,
		path: '/v1/chat/completions',
		finish: { stop: 'stop', length: 'length' },
		async whole(req) {
			const r = await hf.chatCompletion(args(req), opts);
			return { text: r.choices?.[0]?.message?.content,
			    finish: r.choices?.[0]?.finish_reason,
			    usage: usage(r.usage), id: idOf(r.id) };
		},
		async stream(req, what) {
			/* HF does not ask for usage itself */
			const r = await read(hf.chatCompletionStream({
			    ...args(req), stream_options: { include_usage:
			    true } }, opts));
			check(r.ids.size === 1, `${name} ${what} stream: ` +
			    `chunk ids ${show([...r.ids])}`);
			return { text: r.text, finish: r.finish,
			    usage: usage(r.usage), id: idOf([...r.ids][0]),
			    deltas: r.deltas };
		},
		async abort(req) {
			const ac = new AbortController();
			let r = null;
			let err = null;
			let id = null;
			let deltas = 0;
			try {
				const s = hf.chatCompletionStream(args(req),
				    { ...opts, signal: ac.signal });
				r = await read((async function* () {
					for await (const c of s) {
						id ??= c.id;
						yield c;
					}
				})(), (n) => {
					deltas = n;
					if (n === ABORT_AFTER)
						ac.abort();
				});
			} catch (e) {
				err = e;
			}
			/* the fetch's reader throws an AbortError */
			return { id: idOf(id), deltas,
			    ok: r === null && err?.name === 'AbortError',
			    how: err ? `threw ${err.name}: ${err.message}` :
			    'ended without an error' };
		},
	};
}

/* ---- the plan, the same for every driver ---- */

/* Checks a finished request against what the server says it generated. */
async function against(d, what, r) {
	check(r.id !== null && r.id !== undefined, `${d.name} ${what}: ` +
	    `no request id`);
	const dbg = await debugWhenDone(r.id);
	const u = r.usage;
	check(dbg.status === 'done' && dbg.generated === u.completion &&
	    dbg.prompt_tokens === u.prompt && u.total === u.prompt +
	    u.completion, `${d.name} ${what}: usage ${show(u)}, ` +
	    `/_debug/generated?id=${r.id} ${dbg.status} generated ` +
	    `${dbg.generated} prompt_tokens ${dbg.prompt_tokens}`);
}

/*
 * What the keep-alive requests of the plan get, by plain fetch: a stream
 * with ": keep-alive" comments (chat: before the first event; responses:
 * after the four events that go out with the 200), a JSON body after
 * newlines. Without them the "keep-alive" checks would test nothing.
 */
async function keepaliveSent(d, req) {
	const chat = d.path === '/v1/chat/completions';
	const body = { model: MODEL, seed: req.seed, ...req.extra,
	    ...(chat ? { messages: [{ role: 'user', content: req.prompt }],
	    max_tokens: req.maxTokens } : { input: req.prompt,
	    max_output_tokens: req.maxTokens }) };
	const post = async (b) => (await fetch(`${baseArg}${d.path}`, {
	    method: 'POST', headers: { 'Content-Type': 'application/json' },
	    body: JSON.stringify(b) })).text();
	const sse = await post({ ...body, stream: true });
	const at = sse.indexOf(': keep-alive\n\n');
	const first = sse.indexOf(chat ? 'data: ' :
	    'event: response.output_text.delta');
	check(at >= 0 && at < first && (at === 0 || sse[at - 1] === '\n'),
	    `${d.name} keep-alive: no ": keep-alive" before the first ` +
	    `token in ${show(sse.slice(0, 300))}`);
	const json = await post(body);
	check(/^\n+\{/.test(json), `${d.name} keep-alive: no newlines ` +
	    `before the JSON: ${show(json.slice(0, 40))}`);
}

/* One request without and with stream; they must agree. */
async function both(d, what, req) {
	const whole = await d.whole(req, what);
	await against(d, what, whole);
	check(typeof whole.text === 'string' && whole.text.length > 0,
	    `${d.name} ${what}: text ${show(whole.text)}`);
	const s = await d.stream(req, what);
	await against(d, `${what} stream`, s);
	check(s.text === whole.text, `${d.name} ${what}: streamed text ` +
	    `differs:\n  stream ${show(s.text)}\n  whole  ${show(whole.text)}`);
	check(s.finish === whole.finish, `${d.name} ${what}: stream finish ` +
	    `${show(s.finish)}, whole ${show(whole.finish)}`);
	check(show(s.usage) === show(whole.usage), `${d.name} ${what}: ` +
	    `stream usage ${show(s.usage)}, whole ${show(whole.usage)}`);
	check(s.deltas >= 2, `${d.name} ${what}: ${s.deltas} text deltas`);
	check(s.id !== whole.id, `${d.name} ${what}: the stream and the ` +
	    `whole answer have the same request id ${s.id}`);
	return whole;
}

async function plan(d) {
	const base = { prompt: 'tell me a story', maxTokens: 1000, seed: 7 };

	/* ended by EOS: "stop", fewer tokens than max_tokens */
	const eos = await both(d, 'EOS', { ...base, extra: FAST });
	check(eos.finish === d.finish.stop && eos.usage.completion < 1000,
	    `${d.name} EOS: finish ${show(eos.finish)}, usage ` +
	    show(eos.usage));
	check(/[^\x00-\x7f]/.test(eos.text), `${d.name} EOS: no non-ASCII ` +
	    `text in ${show(eos.text)}`);

	/* a prefill of 1.2 s: ": keep-alive" comments, or newlines before
	 * the JSON, come first */
	const slowReq = { ...base, extra: { ...FAST, prefill_ms: 1200 } };
	await keepaliveSent(d, slowReq);
	const slow = await both(d, 'keep-alive', slowReq);
	check(slow.text === eos.text, `${d.name} keep-alive: text ` +
	    `${show(slow.text)}, without the prefill ${show(eos.text)}`);

	/* max_tokens reached: "length", a prefix of the EOS text (no
	 * ignore_eos: it masks EOS before sampling, which changes the draws) */
	const len = await both(d, 'length', { ...base, maxTokens: 8,
	    extra: FAST });
	check(len.finish === d.finish.length && len.usage.completion === 8 &&
	    eos.text.startsWith(len.text), `${d.name} length: finish ` +
	    `${show(len.finish)}, usage ${show(len.usage)}, text ` +
	    `${show(len.text)}`);

	/* a stop string from the middle of the EOS text: "stop", the text
	 * before it */
	let cut = Math.floor(eos.text.length / 2);
	while (cut < eos.text.length &&
	    !/^[ -~]{5}$/.test(eos.text.slice(cut, cut + 5)))
		cut++;
	const stop = eos.text.slice(cut, cut + 5);
	if (check(stop.length === 5, `${d.name}: no ASCII stop string in ` +
	    show(eos.text))) {
		const st = await both(d, 'stop', { ...base, stop: [stop],
		    extra: FAST });
		const want = eos.text.slice(0, eos.text.indexOf(stop));
		check(st.finish === d.finish.stop && st.text === want,
		    `${d.name} stop ${show(stop)}: finish ` +
		    `${show(st.finish)}, text ${show(st.text)}, want ` +
		    show(want));
	}

	/* leaving a stream: the generation is cancelled */
	const a = await d.abort({ prompt: 'leave', maxTokens: 200, seed: 7,
	    extra: ABORT });
	check(a.deltas === ABORT_AFTER && a.ok, `${d.name} abort: ` +
	    `${a.deltas} deltas, then ${a.how}`);
	if (check(a.id !== null && a.id !== undefined, `${d.name} abort: ` +
	    'no request id')) {
		const dbg = await debugWhenDone(a.id);
		const cancelled = dbg.status === 'cancelled' &&
		    dbg.finish_reason === 'abort' &&
		    dbg.generated <= ABORT_AFTER + 6;
		/*
		 * Debian 12's Node 18, whose fetch is undici 5.15, does not
		 * always close the connection when the AI SDK aborts a stream
		 * (the stream then runs to its end: the server never sees the
		 * client leave; /v1/responses 2 of 12 runs here, chat once in a
		 * fresh Debian 12 root's ASan pass on 2026-12-02), nor when
		 * LangChain does (once in a fresh root's ASan pass on
		 * 2026-12-06); never on Node 20. That is the client's defect,
		 * so it is reported, not failed, there; on Node 20, and for
		 * Hugging Face's client, a stream that runs on fails.
		 */
		if (!cancelled && d.undiciMayKeepOpen && NODE_MAJOR < 20 &&
		    dbg.status === 'done')
			console.log(`NOTE: ${d.name} abort on Node ` +
			    `${process.versions.node}: the client kept the ` +
			    'connection open (undici 5), the stream ran to its end');
		else
			check(cancelled, `${d.name} abort after ` +
			    `${a.deltas} deltas: /_debug/generated ${show(dbg)}`);
	}
}

const RUNS = {
	'ai-sdk': async () => {
		await plan(aiDriver('responses'));
		await plan(aiDriver('chat'));
		return `${version('ai')}, ${version('@ai-sdk/openai')}`;
	},
	langchain: async () => {
		await plan(langchainDriver());
		return `${version('@langchain/openai')}, ` +
		    version('@langchain/core');
	},
	huggingface: async () => {
		await plan(huggingfaceDriver());
		return version('@huggingface/inference');
	},
};

async function main(libs) {
	const oks = [];
	for (const lib of libs) {
		const before = failures.length;
		const first = checks;
		let versions;
		try {
			versions = await RUNS[lib]();
		} catch (err) {
			check(false, `${lib}: exception: ${err?.stack || err}`);
		}
		if (failures.length === before)
			oks.push(`ok: ${lib}: ${versions} against ${baseArg}/v1, ` +
			    `${checks - first} checks`);
	}
	if (failures.length > 0) {
		for (const f of failures)
			console.log(`FAIL: ${f}`);
		process.exit(1);
	}
	for (const line of oks)
		console.log(line);
}

const libs = process.argv.slice(3);
if (!baseArg || !URL.canParse(baseArg) ||
    libs.some((l) => !LIBRARIES.includes(l))) {
	console.log('usage: clients.mjs BASE [ai-sdk|langchain|huggingface]' +
	    '... (BASE e.g. http://127.0.0.1:8170)');
	process.exit(2);
}
main(libs.length > 0 ? libs : LIBRARIES).catch((err) => {
	console.log(`FAIL: exception: ${err?.stack || err}`);
	for (const f of failures)
		console.log(`FAIL: ${f}`);
	process.exit(1);
});
