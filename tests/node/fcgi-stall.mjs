// fcgi-stall.mjs SOCKET PATH_AND_QUERY SECONDS
//
// A FastCGI client (FastCGI 1.0, section 3-5) that sends one GET request
// straight to the responder's unix socket, reads nothing at all, and holds
// the connection open for SECONDS: the responder's writes block once the
// socket buffer is full, the way they do behind lighttpd when a client stops
// reading (NOTES "lighttpd buffering"), only without megabytes of TCP buffers
// in between. Prints "closed-by-server" if the responder shut the
// connection, "held" otherwise. Node's built-in net module only.
import net from 'node:net';

const [sock, pathq, seconds] = process.argv.slice(2);
const [path, query = ''] = pathq.split('?');

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

const params = Buffer.concat([
  pair('REQUEST_METHOD', 'GET'), pair('REQUEST_URI', pathq),
  pair('SCRIPT_NAME', path), pair('QUERY_STRING', query),
  pair('REMOTE_ADDR', '127.0.0.1'), pair('SERVER_PROTOCOL', 'HTTP/1.1'),
]);
const begin = Buffer.from([0, 1, 0, 0, 0, 0, 0, 0]);   // FCGI_RESPONDER

const c = net.connect(sock, () => {
  c.write(Buffer.concat([record(1, begin), record(4, params),
    record(4, Buffer.alloc(0)), record(5, Buffer.alloc(0))]));
  c.pause();                      // never read: the server's writes block
});
let closed = false;
c.on('close', () => { closed = true; });
c.on('end', () => { closed = true; });
c.on('error', () => { closed = true; });
setTimeout(() => {
  console.log(closed ? 'closed-by-server' : 'held');
  c.destroy();
}, Number(seconds) * 1000);
