#!/usr/bin/env node
/*
 * sim.mjs MODE BASE [N] - the simulator's agent-facing features checked
 * from outside, with real validators and real clients (sim.bats):
 *
 *   tools BASE N     N seeded chat requests over a set of tool schemas
 *                    (tool_choice "required", one to three tools, so
 *                    parallel calls occur): every call's arguments parse
 *                    and validate against its function's parameters with
 *                    ajv (npm, draft 2020-12 where the schema asks for
 *                    it); the same request streamed gives tool_calls
 *                    deltas whose concatenation per index equals the
 *                    non-streamed arguments byte for byte, the head delta
 *                    (id, type, name) first; finish_reason "tool_calls";
 *                    usage.completion_tokens equals /_debug/generated.
 *   json BASE N      N seeded requests with response_format json_schema
 *                    (strict) over the same schemas: the content parses
 *                    and validates, streamed equals non-streamed.
 *   logprobs BASE    chat logprobs + top_logprobs and completions
 *                    logprobs: top lists sorted, values <= 0, the sampled
 *                    token among the top ones where it should be, greedy
 *                    (temperature 0) picks the top one, bytes are the
 *                    token's UTF-8, streamed equals non-streamed, two runs
 *                    give identical bytes.
 *   agent BASE       a tool-calling loop end to end with the official
 *                    openai SDK (call, tool result, final answer) and with
 *                    the Vercel AI SDK (generateText with a tool and
 *                    stopWhen: stepCountIs(4)): the model calls the tool,
 *                    gets its result and answers with text.
 *
 * Prints "FAIL: ..." lines and exits 1 on any failure, else "ok: ..." and
 * exits 0. Node 18 (Debian 12) or later.
 */
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';

const [mode, BASE, nArg] = process.argv.slice(2);
const N = Number(nArg || 100);
const MODEL = 'tokstream-sim';
let failures = 0;

function fail(what, detail) {
	failures++;
	if (failures <= 20)
		console.log(`FAIL: ${what}${detail ? `: ${detail}` : ''}`);
}

function check(cond, what, detail) {
	if (!cond)
		fail(what, detail);
	return cond;
}

const AjvC = Ajv.default || Ajv;
const Ajv20C = Ajv2020.default || Ajv2020;
/* formats are checked by hand below (ajv-formats is not installed):
 * ajv is told the names exist so that "format" is not an error */
const formats = ['date-time', 'date', 'time', 'email', 'uuid', 'uri', 'url',
	'ipv4', 'hostname'];
function newAjv(C) {
	const a = new C({ strict: false, allErrors: true });
	for (const f of formats)
		a.addFormat(f, true);
	return a;
}
const ajv07 = newAjv(AjvC);
const ajv20 = newAjv(Ajv20C);

/* the format checks ajv is not doing: what the generator promises */
const formatRe = {
	'date-time': /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
	date: /^\d{4}-\d{2}-\d{2}$/,
	time: /^\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/,
	email: /^[^@\s]+@[^@\s]+\.[^@\s]+$/,
	uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
	uri: /^[a-z][a-z0-9+.-]*:\/\/\S+$/i,
	url: /^[a-z][a-z0-9+.-]*:\/\/\S+$/i,
	ipv4: /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/,
	hostname: /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i,
};
function formatsOk(schema, value, path = '') {
	if (schema === null || typeof schema !== 'object')
		return null;
	if (schema.format && typeof value === 'string' && formatRe[schema.format] &&
	    !formatRe[schema.format].test(value))
		return `${path}: "${value}" is not a ${schema.format}`;
	if (schema.properties && value && typeof value === 'object')
		for (const [k, s] of Object.entries(schema.properties))
			if (k in value) {
				const e = formatsOk(s, value[k], `${path}/${k}`);
				if (e) return e;
			}
	if (schema.items && Array.isArray(value))
		for (let i = 0; i < value.length; i++) {
			const e = formatsOk(schema.items, value[i], `${path}/${i}`);
			if (e) return e;
		}
	return null;
}

/* The schemas: what function calling and structured output see in
 * practice (OpenAI's examples, zod-to-json-schema's output, Pydantic's),
 * over every keyword the generator honours. */
const schemas = {
	get_weather: {
		type: 'object',
		properties: {
			location: { type: 'string', description: 'City and country' },
			unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
		},
		required: ['location'],
		additionalProperties: false,
	},
	create_order: {
		type: 'object',
		properties: {
			customer: {
				type: 'object',
				properties: {
					name: { type: 'string', minLength: 2, maxLength: 40 },
					email: { type: 'string', format: 'email' },
				},
				required: ['name', 'email'],
				additionalProperties: false,
			},
			items: {
				type: 'array', minItems: 1, maxItems: 5,
				items: {
					type: 'object',
					properties: {
						sku: { type: 'string', minLength: 6, maxLength: 6 },
						quantity: { type: 'integer', minimum: 1, maximum: 99 },
						price: { type: 'number', exclusiveMinimum: 0, maximum: 1000, multipleOf: 0.01 },
					},
					required: ['sku', 'quantity', 'price'],
					additionalProperties: false,
				},
			},
			express: { type: 'boolean' },
			note: { type: ['string', 'null'] },
		},
		required: ['customer', 'items', 'express', 'note'],
		additionalProperties: false,
	},
	schedule: {
		type: 'object',
		properties: {
			when: { type: 'string', format: 'date-time' },
			day: { type: 'string', format: 'date' },
			id: { type: 'string', format: 'uuid' },
			attendees: { type: 'array', items: { type: 'string', format: 'email' }, uniqueItems: true, maxItems: 4 },
			priority: { type: 'integer', enum: [1, 2, 3] },
			step: { type: 'integer', minimum: -50, maximum: 50, multipleOf: 5 },
		},
		required: ['when', 'id', 'priority'],
	},
	search: {
		type: 'object',
		properties: {
			query: { type: 'string', minLength: 1 },
			filters: {
				anyOf: [
					{ type: 'null' },
					{
						type: 'object',
						properties: {
							site: { type: 'string', format: 'hostname' },
							after: { type: 'string', format: 'date' },
						},
						additionalProperties: false,
					},
				],
			},
			limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
			mode: { const: 'web' },
		},
		required: ['query', 'filters', 'mode'],
		additionalProperties: false,
	},
	tree: {
		$schema: 'https://json-schema.org/draft/2020-12/schema',
		$defs: {
			node: {
				type: 'object',
				properties: {
					label: { type: 'string', maxLength: 12 },
					children: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 },
				},
				required: ['label'],
				additionalProperties: false,
			},
		},
		type: 'object',
		properties: {
			root: { $ref: '#/$defs/node' },
			point: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], minItems: 2, maxItems: 2 },
		},
		required: ['root', 'point'],
	},
	no_params: { type: 'object', properties: {} },
};
const names = Object.keys(schemas);

const validators = {};
for (const n of names) {
	const s = schemas[n];
	validators[n] = (s.$schema && s.$schema.includes('2020-12') ? ajv20 : ajv07).compile(s);
}

function validate(name, value) {
	const v = validators[name];
	if (!v(value))
		return ajv07.errorsText(v.errors);
	return formatsOk(schemas[name], value);
}

async function post(path, body, headers = {}) {
	const r = await fetch(BASE + path, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json', ...headers },
		body: JSON.stringify(body),
	});
	return { status: r.status, headers: r.headers, text: await r.text() };
}

/* The data of each SSE event of a body (one data line per event). */
function events(text) {
	const out = [];
	for (const block of text.split('\n\n')) {
		for (const line of block.split('\n'))
			if (line.startsWith('data: ') && line !== 'data: [DONE]')
				out.push(JSON.parse(line.slice(6)));
	}
	return out;
}

async function pool(n, width, fn) {
	let next = 0;
	async function worker() {
		while (next < n) {
			const i = next++;
			try {
				await fn(i);
			} catch (e) {
				fail(`request ${i}`, String(e && e.stack || e));
			}
		}
	}
	await Promise.all(Array.from({ length: width }, worker));
}

function toolsFor(i) {
	/* one to three distinct tools, rotating through the set */
	const k = 1 + (i % 3);
	const chosen = [];
	for (let j = 0; j < k; j++)
		chosen.push(names[(i + j * 2) % names.length]);
	return [...new Set(chosen)].map((n) => ({
		type: 'function',
		function: { name: n, description: `the ${n} tool`, parameters: schemas[n] },
	}));
}

async function modeTools() {
	let calls = 0, parallel = 0;
	const perTool = {};
	await pool(N, 16, async (i) => {
		const tools = toolsFor(i);
		const body = {
			model: MODEL, seed: i, max_tokens: 2000, tools, tool_choice: 'required',
			messages: [{ role: 'user', content: `request ${i}: use the tools` }],
		};
		const a = await post('/v1/chat/completions', body);
		if (!check(a.status === 200, `tools ${i}: status ${a.status}`, a.text))
			return;
		const o = JSON.parse(a.text);
		const ch = o.choices[0];
		check(ch.finish_reason === 'tool_calls', `tools ${i}: finish_reason ${ch.finish_reason}`);
		check(ch.message.content === null, `tools ${i}: content is not null`);
		const tc = ch.message.tool_calls || [];
		check(tc.length >= 1 && tc.length <= tools.length, `tools ${i}: ${tc.length} calls for ${tools.length} tools`);
		if (tc.length > 1)
			parallel++;
		for (const c of tc) {
			calls++;
			check(/^call_[A-Za-z0-9]{24}$/.test(c.id), `tools ${i}: id ${c.id}`);
			check(c.type === 'function', `tools ${i}: type ${c.type}`);
			const name = c.function.name;
			perTool[name] = (perTool[name] || 0) + 1;
			if (!check(tools.some((t) => t.function.name === name), `tools ${i}: unknown function ${name}`))
				continue;
			let args;
			try {
				args = JSON.parse(c.function.arguments);
			} catch (e) {
				fail(`tools ${i}: ${name} arguments do not parse`, c.function.arguments);
				continue;
			}
			const err = validate(name, args);
			check(err === null, `tools ${i}: ${name} arguments invalid`, `${err}\n    ${c.function.arguments}`);
		}
		/* streamed: the same bytes */
		const s = await post('/v1/chat/completions', { ...body, stream: true, stream_options: { include_usage: true } });
		check(s.status === 200, `tools ${i} stream: status ${s.status}`);
		check(s.text.trimEnd().endsWith('data: [DONE]'), `tools ${i} stream: no [DONE]`);
		const ev = events(s.text);
		const got = [];
		let finish = null, usage = null, roleFirst = null;
		for (const e of ev) {
			if (e.usage)
				usage = e.usage;
			for (const c of e.choices || []) {
				if (c.finish_reason)
					finish = c.finish_reason;
				if (roleFirst === null && c.delta)
					roleFirst = c.delta.role === 'assistant';
				for (const d of (c.delta && c.delta.tool_calls) || []) {
					if (!got[d.index]) {
						check(d.id && d.type === 'function' && d.function && d.function.name,
						    `tools ${i} stream: call ${d.index} does not start with its head`, JSON.stringify(d));
						got[d.index] = { id: d.id, name: d.function.name, args: d.function.arguments || '' };
					} else {
						check(d.id === undefined, `tools ${i} stream: a second head for call ${d.index}`);
						got[d.index].args += d.function.arguments;
					}
				}
			}
		}
		check(roleFirst === true, `tools ${i} stream: the first delta has no role`);
		check(finish === 'tool_calls', `tools ${i} stream: finish ${finish}`);
		check(got.length === tc.length, `tools ${i} stream: ${got.length} calls, ${tc.length} without stream`);
		for (let k = 0; k < tc.length && k < got.length; k++) {
			check(got[k].id === tc[k].id && got[k].name === tc[k].function.name,
			    `tools ${i} stream: call ${k} head differs`);
			check(got[k].args === tc[k].function.arguments,
			    `tools ${i} stream: call ${k} arguments differ`, `${got[k].args}\n    vs ${tc[k].function.arguments}`);
		}
		check(usage && usage.completion_tokens === o.usage.completion_tokens &&
		    usage.prompt_tokens === o.usage.prompt_tokens, `tools ${i} stream: usage differs`,
		    JSON.stringify([usage, o.usage]));
		const id = Number(String(o.id).replace(/^chatcmpl-/, ''));
		const dbg = await fetch(`${BASE}/_debug/generated?id=${id}`);
		const dj = await dbg.json();
		check(dj.generated === o.usage.completion_tokens, `tools ${i}: generated ${dj.generated} != usage ${o.usage.completion_tokens}`);
	});
	for (const n of names)
		check((perTool[n] || 0) > 0, `tools: ${n} was never called`);
	if (failures === 0)
		console.log(`ok: ${N} requests, ${calls} tool calls validated (${parallel} with parallel calls), streamed == non-streamed; per tool ${JSON.stringify(perTool)}`);
}

async function modeJson() {
	let n = 0;
	await pool(N, 16, async (i) => {
		const name = names[i % names.length];
		const body = {
			model: MODEL, seed: i, max_tokens: 2000,
			response_format: { type: 'json_schema', json_schema: { name, strict: true, schema: schemas[name] } },
			messages: [{ role: 'user', content: `give me a ${name}, ${i}` }],
		};
		const a = await post('/v1/chat/completions', body);
		if (!check(a.status === 200, `json ${i}: status ${a.status}`, a.text))
			return;
		const o = JSON.parse(a.text);
		const text = o.choices[0].message.content;
		check(o.choices[0].finish_reason === 'stop', `json ${i}: finish ${o.choices[0].finish_reason}`);
		let v;
		try {
			v = JSON.parse(text);
		} catch (e) {
			fail(`json ${i}: content does not parse`, text);
			return;
		}
		const err = validate(name, v);
		check(err === null, `json ${i}: ${name} invalid`, `${err}\n    ${text}`);
		const s = await post('/v1/chat/completions', { ...body, stream: true });
		const streamed = events(s.text).map((e) => (e.choices[0] && e.choices[0].delta.content) || '').join('');
		check(streamed === text, `json ${i}: streamed differs`, `${streamed}\n    vs ${text}`);
		check(events(s.text).filter((e) => e.choices[0] && e.choices[0].delta.content).length > 1,
		    `json ${i}: not streamed token by token`);
		n++;
	});
	/* json_object: an object */
	const a = await post('/v1/chat/completions', {
		model: MODEL, seed: 1, response_format: { type: 'json_object' },
		messages: [{ role: 'user', content: 'answer in JSON' }],
	});
	const o = JSON.parse(a.text);
	let v = null;
	try {
		v = JSON.parse(o.choices[0].message.content);
	} catch (e) { /* below */ }
	check(v !== null && typeof v === 'object' && !Array.isArray(v), 'json_object: not an object', a.text);
	if (failures === 0)
		console.log(`ok: ${n} json_schema outputs validated, streamed == non-streamed; json_object gives an object`);
}

function utf8(s) {
	return [...Buffer.from(s, 'utf8')];
}

async function modeLogprobs() {
	const msg = [{ role: 'user', content: 'tell me about rivers' }];
	const body = { model: MODEL, seed: 7, max_tokens: 40, logprobs: true, top_logprobs: 5, messages: msg };
	const a = await post('/v1/chat/completions', body);
	const b = await post('/v1/chat/completions', body);
	check(a.status === 200, `logprobs: status ${a.status}`, a.text);
	const oa = JSON.parse(a.text), ob = JSON.parse(b.text);
	check(JSON.stringify(oa.choices) === JSON.stringify(ob.choices), 'logprobs: two runs differ');
	const content = oa.choices[0].logprobs && oa.choices[0].logprobs.content;
	if (!check(Array.isArray(content) && content.length > 0, 'logprobs: no content list', a.text))
		return;
	check(content.length === oa.usage.completion_tokens - (oa.choices[0].finish_reason === 'stop' ? 1 : 0),
	    `logprobs: ${content.length} entries for ${oa.usage.completion_tokens} tokens`);
	let joined = Buffer.alloc(0), inTop = 0;
	for (const [k, t] of content.entries()) {
		check(t.logprob <= 0, `logprobs ${k}: logprob ${t.logprob} > 0`);
		check(t.top_logprobs.length === 5, `logprobs ${k}: ${t.top_logprobs.length} alternatives`);
		for (let j = 1; j < t.top_logprobs.length; j++)
			check(t.top_logprobs[j - 1].logprob >= t.top_logprobs[j].logprob, `logprobs ${k}: top not sorted`);
		for (const x of t.top_logprobs) {
			check(x.logprob <= 0, `logprobs ${k}: top logprob > 0`);
			if (!x.token.startsWith('bytes:'))
				check(JSON.stringify(x.bytes) === JSON.stringify(utf8(x.token)), `logprobs ${k}: bytes of ${x.token}`);
		}
		const hit = t.top_logprobs.find((x) => x.token === t.token);
		if (hit) {
			inTop++;
			check(Math.abs(hit.logprob - t.logprob) < 1e-6, `logprobs ${k}: sampled logprob differs from its top entry`);
		} else {
			check(t.logprob <= t.top_logprobs[4].logprob, `logprobs ${k}: the sampled token is missing from a top list it belongs to`);
		}
		joined = Buffer.concat([joined, Buffer.from(t.bytes)]);
	}
	check(joined.toString('utf8') === oa.choices[0].message.content, 'logprobs: the tokens\' bytes do not spell the content',
	    `${joined.toString('utf8')}\n    vs ${oa.choices[0].message.content}`);
	/* greedy: the sampled token is always the most probable */
	const g = JSON.parse((await post('/v1/chat/completions', { ...body, temperature: 0 })).text);
	for (const [k, t] of g.choices[0].logprobs.content.entries())
		check(t.token === t.top_logprobs[0].token && t.logprob === t.top_logprobs[0].logprob,
		    `greedy ${k}: sampled ${t.token} is not the top ${t.top_logprobs[0].token}`);
	/* streamed: the same entries, spread over the chunks */
	const s = await post('/v1/chat/completions', { ...body, stream: true });
	const streamed = [];
	for (const e of events(s.text))
		for (const c of e.choices)
			if (c.logprobs && c.logprobs.content)
				streamed.push(...c.logprobs.content);
	check(JSON.stringify(streamed) === JSON.stringify(content), 'logprobs: streamed entries differ',
	    `${streamed.length} vs ${content.length}`);
	/* completions: logprobs N */
	const c = JSON.parse((await post('/v1/completions', { model: MODEL, prompt: 'Once upon', seed: 3, max_tokens: 12, logprobs: 3 })).text);
	const lp = c.choices[0].logprobs;
	check(lp && lp.tokens.length === lp.token_logprobs.length && lp.tokens.length === lp.top_logprobs.length &&
	    lp.tokens.length === lp.text_offset.length, 'completions logprobs: the lists differ in length', JSON.stringify(lp));
	if (lp) {
		check(lp.top_logprobs.every((o) => Object.keys(o).length <= 3 && Object.keys(o).length >= 1), 'completions logprobs: top sizes');
		let off = 0;
		for (let k = 0; k < lp.tokens.length; k++) {
			check(lp.text_offset[k] === off, `completions logprobs: text_offset ${k}`);
			off += lp.tokens[k].startsWith('bytes:') ? (lp.tokens[k].length - 6) / 4 : Buffer.byteLength(lp.tokens[k]);
		}
	}
	/* bounds */
	const bad = await post('/v1/chat/completions', { ...body, top_logprobs: 21 });
	check(bad.status === 400, `top_logprobs 21: status ${bad.status}`);
	const bad2 = await post('/v1/chat/completions', { model: MODEL, messages: msg, top_logprobs: 2 });
	check(bad2.status === 400, `top_logprobs without logprobs: status ${bad2.status}`);
	if (failures === 0)
		console.log(`ok: logprobs: ${content.length} tokens (${inTop} sampled within their top 5), sorted, <= 0, bytes spell the text, greedy = top, streamed = whole, runs identical; completions lists consistent`);
}

async function modeAgent() {
	const OpenAI = (await import('openai')).default;
	const client = new OpenAI({ baseURL: `${BASE}/v1`, apiKey: 'none', maxRetries: 0 });
	const tools = [{
		type: 'function',
		function: { name: 'get_weather', description: 'weather of a city', parameters: schemas.get_weather },
	}];
	const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
	const first = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'auto', seed: 1 });
	let c = first.choices[0];
	/* auto may answer directly (1 in 4 draws); seed 1 calls: else try
	 * another seed so the loop is exercised, and say which */
	let seed = 1;
	for (; c.finish_reason !== 'tool_calls' && seed < 20; seed++)
		c = (await client.chat.completions.create({ model: MODEL, messages, tools, seed: seed + 1 })).choices[0];
	if (!check(c.finish_reason === 'tool_calls', 'openai sdk: no tool call in 20 seeds'))
		return;
	const call = c.message.tool_calls[0];
	const args = JSON.parse(call.function.arguments);
	check(validate('get_weather', args) === null, 'openai sdk: arguments invalid', call.function.arguments);
	messages.push(c.message);
	messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 18, unit: 'celsius' }) });
	const second = await client.chat.completions.create({ model: MODEL, messages, tools, seed });
	check(second.choices[0].finish_reason === 'stop' && typeof second.choices[0].message.content === 'string' &&
	    second.choices[0].message.content.length > 0, 'openai sdk: no final answer after the tool result',
	    JSON.stringify(second.choices[0]));
	check(second.usage.prompt_tokens > first.usage.prompt_tokens, 'openai sdk: the history did not count as prompt tokens');
	/* streamed through the SDK's helper */
	const stream = client.chat.completions.stream({ model: MODEL, messages: messages.slice(0, 1), tools, tool_choice: 'required', seed });
	const fin = await stream.finalChatCompletion();
	check(fin.choices[0].message.tool_calls && fin.choices[0].message.tool_calls.length >= 1, 'openai sdk stream: no tool call assembled');

	/* the Responses API: function_call items, then the tool's output */
	const rtools = [{ type: 'function', name: 'get_weather', description: 'weather of a city', parameters: schemas.get_weather }];
	const r1 = await client.responses.create({ model: MODEL, input: 'What is the weather in Paris?', tools: rtools, tool_choice: 'required', seed: 2 });
	const fc = r1.output.find((o) => o.type === 'function_call');
	if (check(fc !== undefined, 'responses: no function_call item', JSON.stringify(r1.output))) {
		check(validate('get_weather', JSON.parse(fc.arguments)) === null, 'responses: arguments invalid', fc.arguments);
		const r2 = await client.responses.create({
			model: MODEL, tools: rtools, seed: 2,
			input: [{ role: 'user', content: 'What is the weather in Paris?' }, fc,
				{ type: 'function_call_output', call_id: fc.call_id, output: '{"temperature":18}' }],
		});
		check(r2.status === 'completed' && r2.output_text.length > 0, 'responses: no final text', JSON.stringify(r2.output));
		/* streamed: the SDK assembles the same call */
		const rs = client.responses.stream({ model: MODEL, input: 'What is the weather in Paris?', tools: rtools, tool_choice: 'required', seed: 2 });
		let deltas = '';
		for await (const ev of rs)
			if (ev.type === 'response.function_call_arguments.delta')
				deltas += ev.delta;
		const rf = await rs.finalResponse();
		const sfc = rf.output.find((o) => o.type === 'function_call');
		check(sfc && sfc.arguments === fc.arguments && deltas === fc.arguments && sfc.call_id === fc.call_id,
		    'responses stream: the call differs', JSON.stringify([sfc, deltas, fc]));
	}

	/* the Vercel AI SDK: its own agent loop */
	const { generateText, tool, stepCountIs, jsonSchema } = await import('ai');
	const { createOpenAI } = await import('@ai-sdk/openai');
	const provider = createOpenAI({ baseURL: `${BASE}/v1`, apiKey: 'none' });
	let executed = 0;
	const r = await generateText({
		model: provider.chat(MODEL),
		prompt: 'What is the weather in Paris?',
		toolChoice: 'required',
		tools: {
			get_weather: tool({
				description: 'weather of a city',
				inputSchema: jsonSchema(schemas.get_weather),
				execute: async (input) => {
					executed++;
					check(validate('get_weather', input) === null, 'ai sdk: tool input invalid', JSON.stringify(input));
					return { temperature: 18 };
				},
			}),
		},
		prepareStep: async ({ stepNumber }) => (stepNumber > 0 ? { toolChoice: 'auto' } : {}),
		stopWhen: stepCountIs(4),
	});
	check(executed >= 1, 'ai sdk: the tool never ran');
	check(r.steps.length >= 2, `ai sdk: ${r.steps.length} steps`);
	check(r.finishReason === 'stop' && r.text.length > 0, `ai sdk: finish ${r.finishReason}, text "${r.text}"`);
	if (failures === 0)
		console.log(`ok: agent loops: openai sdk (call ${call.function.name}, tool result, answer of ${second.usage.completion_tokens} tokens; the same over /v1/responses, stream and not); ai sdk ${r.steps.length} steps, tool ran ${executed} time(s), final text ${r.text.length} chars`);
}

const modes = { tools: modeTools, json: modeJson, logprobs: modeLogprobs, agent: modeAgent };
if (!modes[mode]) {
	console.log(`usage: sim.mjs ${Object.keys(modes).join('|')} BASE [N]`);
	process.exit(2);
}
await modes[mode]();
process.exit(failures > 0 ? 1 : 0);
