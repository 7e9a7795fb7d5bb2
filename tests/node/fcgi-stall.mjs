// fcgi-stall.mjs SOCKET PATH_AND_QUERY SECONDS [COUNT]
//
// A FastCGI client (FastCGI 1.0, section 3-5) that sends one GET request
// straight to the responder's unix socket, reads nothing at all, and holds
// the connection open for SECONDS (COUNT such connections, default 1, from
// this one process, "{i}" in PATH_AND_QUERY replaced by 1..COUNT): the
// responder's socket buffer fills, the way it does behind lighttpd when a
// client stops reading (docs/OPERATIONS.md "The lighttpd configuration"),
// only without megabytes of TCP buffers in between. Prints
// "closed-by-server" if the responder shut the connection, "held" otherwise
// (with COUNT > 1: "held N closed-by-server M"). Node's built-in net module
// only.
import net from 'node:net';

const [sock, pathqAll, seconds, countArg = '1'] = process.argv.slice(2);
const count = Number(countArg);

function record(type, body) {
  const h = Buffer.alloc(8);
  h[0] = 1;                       // FCGI_VERSION_1
  h[1] = type;
  h.writeUInt16BE(1, 2);          // request id 1
  h.writeUInt16BE(body.length, 4);
  return Buffer.concat([h, body]);
}

function pair(name, value) {
  const n = Buffer.from(name), v = Buffer.from(value);
  const len = (x) => {
    if (x.length < 128) return Buffer.from([x.length]);
    const b = Buffer.alloc(4);
    b.writeUInt32BE((x.length | 0x80000000) >>> 0);
    return b;
  };
  return Buffer.concat([len(n), len(v), n, v]);
}

function request(pathq) {
  const [path, query = ''] = pathq.split('?');
  const params = Buffer.concat([
    pair('REQUEST_METHOD', 'GET'), pair('REQUEST_URI', pathq),
    pair('SCRIPT_NAME', path), pair('QUERY_STRING', query),
    pair('REMOTE_ADDR', '127.0.0.1'), pair('SERVER_PROTOCOL', 'HTTP/1.1'),
  ]);
  const begin = Buffer.from([0, 1, 0, 0, 0, 0, 0, 0]);   // FCGI_RESPONDER
  return Buffer.concat([record(1, begin), record(4, params),
    record(4, Buffer.alloc(0)), record(5, Buffer.alloc(0))]);
}

const conns = [];
for (let i = 1; i <= count; i++) {
  const st = { closed: false };
  const c = net.connect(sock, () => {
    c.write(request(pathqAll.replaceAll('{i}', String(i))));
    c.pause();                    // never read: the server's writes block
  });
  c.on('close', () => { st.closed = true; });
  c.on('end', () => { st.closed = true; });
  c.on('error', () => { st.closed = true; });
  conns.push({ c, st });
}
setTimeout(() => {
  const closed = conns.filter((x) => x.st.closed).length;
  if (count === 1)
    console.log(closed ? 'closed-by-server' : 'held');
  else
    console.log(`held ${count - closed} closed-by-server ${closed}`);
  for (const x of conns) x.c.destroy();
}, Number(seconds) * 1000);
