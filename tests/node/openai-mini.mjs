#!/usr/bin/env node
/*
 * openai-mini.mjs PORT [KEY] - a tiny OpenAI-style streaming server, not
 * tokstream, for testing `tokbench load --endpoint /v1/...` against
 * "any OpenAI-compatible server" (tests/integration/load-v1.bats). It
 * streams the way vLLM does, with the shapes a benchmark client must
 * handle:
 *   - the first chat chunk carries only the role and content "" at once
 *     (not a token: TTFT is the first content);
 *   - then one chunk per "delta", token k at FIRST_MS + k x TPOT_MS, and
 *     every third delta carries two tokens, so the usage chunk's
 *     completion_tokens (max_tokens) is more than the deltas;
 *   - a finish chunk, the usage chunk when stream_options.include_usage,
 *     data: [DONE].
 * A chat request with "reasoning_effort" first gets min(3, max_tokens - 1)
 * reasoning deltas of one token each, before any content, in the field
 * vLLM streams now, delta.reasoning, or with effort "low" in the older
 * delta.reasoning_content (DeepSeek's; tokbench reads both); they count
 * in completion_tokens (tests/integration/load-dialects.bats).
 * GET /v1/models lists one model, "mini-model". With KEY, every request
 * needs Authorization: Bearer KEY (401 otherwise). Node's modules only.
 *
 *   node tests/node/openai-mini.mjs 8199 [sk-key]  (FIRST_MS 100, TPOT_MS 20)
 */
import http from 'node:http';

const port = Number(process.argv[2] || 8199);
const key = process.argv[3] || '';
const FIRST = Number(process.env.FIRST_MS || 100);
const TPOT = Number(process.env.TPOT_MS || 20);
const MODEL = 'mini-model';

/* The deltas of n tokens: every third carries two. */
function deltas(n) {
	const out = [];
	for (let t = 0; t < n;) {
		const two = out.length % 3 === 2 && t + 2 <= n;
		out.push(two ? ' a b' : ' a');
		t += two ? 2 : 1;
	}
	return out;
}

function json(res, status, obj) {
	res.writeHead(status, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify(obj) + '\n');
}

const server = http.createServer((req, res) => {
	if (key && req.headers.authorization !== `Bearer ${key}`)
		return json(res, 401, { error: { message: 'bad key',
		    type: 'invalid_request_error', param: null,
		    code: 'invalid_api_key' } });
	if (req.method === 'GET' && req.url === '/v1/models')
		return json(res, 200, { object: 'list', data: [{ id: MODEL,
		    object: 'model', created: 0, owned_by: 'mini' }] });
	const chat = req.url === '/v1/chat/completions';
	if (req.method !== 'POST' || (!chat && req.url !== '/v1/completions'))
		return json(res, 404, { error: { message: 'no such endpoint',
		    type: 'invalid_request_error', param: null, code: null } });
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', () => {
		let q;
		try {
			q = JSON.parse(body);
		} catch {
			return json(res, 400, { error: { message: 'bad JSON' } });
		}
		if (q.model !== MODEL)
			return json(res, 404, { error: { message: 'no model',
			    code: 'model_not_found' } });
		const n = Math.max(1, Number(q.max_tokens) || 16);
		const nr = chat && q.reasoning_effort ? Math.min(3, n - 1) : 0;
		const rfield = q.reasoning_effort === 'low' ?
		    'reasoning_content' : 'reasoning';
		const ds = [...Array(nr).fill(null), ...deltas(n - nr)];
		const object = chat ? 'chat.completion.chunk' :
		    'text_completion';
		const base = { id: 'mini-1', object, created: 0, model: MODEL };
		const send = (o) => res.write(`data: ${JSON.stringify(o)}\n\n`);
		const choice = (text, fr) => chat ?
		    { index: 0, delta: text === null ? {} : { content: text },
		      finish_reason: fr } :
		    { index: 0, text: text ?? '', finish_reason: fr };
		res.writeHead(200, { 'Content-Type':
		    'text/event-stream; charset=utf-8' });
		if (chat)
			send({ ...base, choices: [{ index: 0, delta: {
			    role: 'assistant', content: '' },
			    finish_reason: null }] });
		const t0 = Date.now();
		let k = 0;
		const tick = () => {
			if (k < ds.length) {
				send({ ...base, choices: [ds[k] === null ?
				    { index: 0, delta: { [rfield]: ' think' },
				      finish_reason: null } :
				    choice(ds[k], null)] });
				k++;
				timer = setTimeout(tick, Math.max(0, t0 + FIRST +
				    k * TPOT - Date.now()));
				return;
			}
			send({ ...base, choices: [choice(null, 'length')] });
			if (q.stream_options?.include_usage)
				send({ ...base, choices: [], usage: {
				    prompt_tokens: 7, completion_tokens: n,
				    total_tokens: 7 + n } });
			res.end('data: [DONE]\n\n');
			timer = null;
		};
		let timer = setTimeout(tick, FIRST);
		res.on('close', () => { if (timer) clearTimeout(timer); });
	});
});
server.listen(port, '127.0.0.1', () => {
	console.error(`openai-mini: pid ${process.pid} on ` +
	    `http://127.0.0.1:${port}`);
});
