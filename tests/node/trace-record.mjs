#!/usr/bin/env node
/*
 * trace-record.mjs OUT BASE PATH BODY [BODY...] - records requests as a
 * tokstream trace, version 1 (src/trace/trace.h): POSTs each BODY (a
 * string, sent as is) to BASE + PATH, one after another, and writes the
 * header line, one request line each (status, headers as received, every
 * read of the body with its time in us from the request's start) and the
 * concurrency line to OUT. tests/integration/replay.bats uses it to read
 * what `tokstream-fcgi --replay` sends back, byte for byte and when, for
 * bodies taken from a `tokbench record` trace (tokbench makes its own
 * bodies from a workload; this sends given ones).
 * Node's modules only.
 */
import fs from 'node:fs';
import http from 'node:http';

const [out, base, path, ...bodies] = process.argv.slice(2);
const us = () => Number(process.hrtime.bigint() / 1000n);
const t0 = us();

/* bytes as the trace writes them: a string when valid UTF-8 */
function bytesJson(buf) {
	const s = buf.toString('utf8');
	return Buffer.from(s, 'utf8').equals(buf) ? s :
	    { b64: buf.toString('base64') };
}

function one(i, body) {
	return new Promise((resolve) => {
		const start = us();
		const u = new URL(path, base);
		const rec = { type: 'request', i, start_us: start - t0,
		    end_us: 0, method: 'POST', path, body, status: 0,
		    headers: [], chunks: [], token_events: [],
		    prompt_tokens: null, output_tokens: null,
		    cached_tokens: null, warmup: false, error: null };
		const req = http.request(u, { method: 'POST', headers: {
		    'Content-Type': 'application/json',
		    'Content-Length': Buffer.byteLength(body) } }, (res) => {
			rec.status = res.statusCode;
			for (let k = 0; k < res.rawHeaders.length; k += 2)
				rec.headers.push([res.rawHeaders[k].toLowerCase(),
				    res.rawHeaders[k + 1]]);
			res.on('data', (b) => rec.chunks.push([us() - start,
			    bytesJson(b)]));
			res.on('end', () => {
				rec.end_us = us() - start;
				resolve(rec);
			});
		});
		req.on('error', (e) => {
			rec.error = String(e);
			rec.end_us = us() - start;
			resolve(rec);
		});
		req.end(body);
	});
}

const lines = [JSON.stringify({ type: 'header', tokstream_trace: 1,
    tool: 'trace-record.mjs', created: new Date().toISOString(),
    target: base, endpoint: path, options: {} })];
for (let i = 0; i < bodies.length; i++)
	lines.push(JSON.stringify(await one(i, bodies[i])));
lines.push(JSON.stringify({ type: 'concurrency', samples: [] }));
fs.writeFileSync(out, lines.join('\n') + '\n');
