// scripts/peers/node-sse.mjs PORT - the peer of scripts/bench-capacity: a
// minimal Node.js `http` server that streams Server-Sent Events the way
// tokstream's GET /stream does (an `id:` line and a `data: {"token":...}`
// line per token, then `data: [DONE]`), paced like a model with no
// prefill: token k of a stream (k = 0, 1, ...) is written k x TPOT_MS
// after its request arrived (as tokstream with --prefill-base-ms 0
// --prefill-per-token-ms 0 sends its first token at once when idle), one
// timer per stream on absolute deadlines, so a late timer does not shift
// the later tokens. It generates nothing: what it measures is what a
// plain event-loop server costs to hold the same streams.
//
//   node scripts/peers/node-sse.mjs 8190          (TPOT_MS=20 by default)
//   curl -N 'http://127.0.0.1:8190/stream?prompt=x&max_tokens=5'
//
// GET /stream?max_tokens=N (1..8192, default 16; other parameters are
// ignored), GET /health. Node's own modules only.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const port = Number(process.argv[2] || 8190);
const tpot = Number(process.env.TPOT_MS || 20);
const words = [' the', ' model', ' streams', ' tokens', ' to', ' every',
  ' client', ',', ' one', ' step', ' at', ' a', ' time', '.'];

const server = http.createServer((req, res) => {
  const u = new URL(req.url, 'http://peer');
  if (u.pathname === '/health') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"status":"ok"}\n');
    return;
  }
  if (u.pathname !== '/stream' || req.method !== 'GET') {
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{"error":{"message":"no such endpoint"}}\n');
    return;
  }
  let n = parseInt(u.searchParams.get('max_tokens') ?? '16', 10);
  if (!(n >= 1 && n <= 8192)) n = 16;
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    'X-Accel-Buffering': 'no',
  });
  res.write('retry: 1000\n\n');
  const t0 = performance.now();
  let k = 0;
  let timer = null;
  const tick = () => {
    k++;
    res.write(`id: ${k - 1}\ndata: ${JSON.stringify({ token: words[k % words.length] })}\n\n`);
    if (k >= n) {
      res.end('data: [DONE]\n\n');
      timer = null;
      return;
    }
    timer = setTimeout(tick, Math.max(0, t0 + k * tpot - performance.now()));
  };
  timer = setTimeout(tick, 0);
  res.on('close', () => { if (timer) clearTimeout(timer); });
});
server.keepAliveTimeout = 5000;
server.listen(port, '127.0.0.1', () => {
  console.error(`node-sse: pid ${process.pid} on http://127.0.0.1:${port}, TPOT ${tpot} ms`);
});
