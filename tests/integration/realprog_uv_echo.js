// Helper of realprog_spawn.sh: a Node.js (libuv) echo server and its
// clients in one process, on 127.0.0.1.
//
//   node realprog_uv_echo.js [CONNECTIONS] [MESSAGES]
//   node realprog_uv_echo.js --uring-fds    (see below)
//
// Each client connection writes MESSAGES small messages of various sizes
// (seeded, so every run sends the same bytes) in bursts of a few writes;
// the server echoes what it reads; the client compares every echoed byte
// with what it sent, then ends its side; the server ends its own when the
// client's FIN arrives; the process exits when every connection has
// closed.  Every 25 bursts, connection 0 also starts two children
// (spawnSync and execFile: libuv's uv_spawn) while the others carry
// data.  What it prints is deterministic: the test compares a plain run
// with runs under the library.  A watchdog ends a stuck run with status 2.
'use strict';
const net = require('net');
const crypto = require('crypto');
const cp = require('child_process');

if (process.argv[2] === '--uring-fds') {
  // How many io_uring instances this process has once its loop has run a
  // listen, a connect and an accept: run without the library, this says
  // whether this node's libuv uses io_uring (libuv >= 1.45 sets one up for
  // epoll_ctl batching; recent node releases only with UV_USE_IO_URING=1).
  const fs = require('fs');
  const srv = net.createServer((s) => s.destroy()).listen(0, '127.0.0.1', () => {
    const c = net.connect(srv.address().port, '127.0.0.1', () => {
      let n = 0;
      for (const f of fs.readdirSync('/proc/self/fd')) {
        try { if (fs.readlinkSync('/proc/self/fd/' + f).includes('io_uring')) n++; } catch (e) { /* closed meanwhile */ }
      }
      console.log(n);
      c.destroy();
      srv.close();
    });
  });
  return;
}

const NCONN = parseInt(process.argv[2] || '3', 10);
const NMSG = parseInt(process.argv[3] || '600', 10);
const SIZES = [1, 2, 3, 7, 16, 31, 64, 100, 255, 512, 1000, 1448, 2048, 4000, 8192, 20000];

const watchdog = setTimeout(() => {
  console.log('TIMEOUT: echo did not finish; progress: ' + JSON.stringify(progress));
  process.exit(2);
}, parseInt(process.env.ECHO_WATCHDOG_MS || '20000', 10));

// xorshift32: the same sequence on every run and every node version.
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
}

const progress = [];
const results = [];  // printed in connection order at the end
let failures = 0;
let closed = 0;
let serverSockets = 0;

const server = net.createServer((s) => {
  serverSockets++;
  s.on('data', (d) => s.write(d));
  s.on('end', () => s.end());
  s.on('error', (e) => { console.log('server socket error: ' + e.code); failures++; });
});

let spawned = 0, childOk = 0;
function children() {
  spawned += 2;
  const r = cp.spawnSync('/bin/sh', ['-c', 'echo sync child'], { timeout: 10000 });
  if (r.status === 0 && String(r.stdout) === 'sync child\n') childOk++;
  cp.execFile('/bin/sh', ['-c', 'echo async child'], { timeout: 10000 }, (e, out) => {
    if (!e && out === 'async child\n') childOk++;
  });
}
process.on('exit', () => {
  if (process.argv[2] === '--uring-fds') return;
  console.log(`children: ${childOk} of ${spawned} ran and exited as expected`);
  if (childOk !== spawned) process.exitCode = 1;
});

function client(port, id) {
  const r = rng(0x9e3779b9 ^ (id * 7919));
  const sent = [];           // buffers written, not yet all echoed
  let sentOff = 0;           // bytes of sent[0] already matched
  let written = 0, echoed = 0, msgs = 0, bad = 0;
  const hash = crypto.createHash('sha256');
  const st = { id, msgs: 0, written: 0, echoed: 0 };
  progress.push(st);
  const c = net.connect(port, '127.0.0.1');
  c.setNoDelay(id % 2 === 0);

  let bursts = 0;
  function burst() {
    if (id === 0 && ++bursts % 25 === 0) children();
    // 1 to 6 messages at once, then wait for all of them to come back.
    const n = 1 + (r() % 6);
    for (let i = 0; i < n && msgs < NMSG; i++, msgs++) {
      const size = SIZES[r() % SIZES.length];
      const b = Buffer.allocUnsafe(size);
      for (let j = 0; j < size; j++) b[j] = r() & 0xff;
      sent.push(b);
      written += size;
      hash.update(b);
      c.write(b);
    }
    st.msgs = msgs; st.written = written;
  }

  c.on('connect', burst);
  c.on('data', (d) => {
    let off = 0;
    while (off < d.length) {
      if (sent.length === 0) { bad += d.length - off; break; }
      const want = sent[0];
      const k = Math.min(want.length - sentOff, d.length - off);
      if (Buffer.compare(want.subarray(sentOff, sentOff + k), d.subarray(off, off + k)) !== 0) bad += k;
      off += k; sentOff += k;
      if (sentOff === want.length) { sent.shift(); sentOff = 0; }
    }
    echoed += d.length;
    st.echoed = echoed;
    if (echoed === written) {
      if (msgs < NMSG) burst();
      else c.end();
    }
  });
  c.on('end', () => {
    const ok = bad === 0 && echoed === written && sent.length === 0;
    if (!ok) failures++;
    results[id] = (`conn ${id}: ${msgs} messages, ${written} bytes written, ${echoed} echoed, ` +
                `${bad} bytes differ, sha256 ${hash.digest('hex').slice(0, 16)} ${ok ? 'ok' : 'FAIL'}`);
  });
  c.on('close', () => {
    if (++closed === NCONN) server.close();
  });
  c.on('error', (e) => { console.log(`conn ${id} error: ${e.code}`); failures++; });
}

server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  for (let i = 0; i < NCONN; i++) client(port, i);
});
server.on('close', () => {
  clearTimeout(watchdog);
  for (let i = 0; i < NCONN; i++) console.log(results[i] || `conn ${i}: never ended FAIL`);
  if (results.filter(Boolean).length !== NCONN) failures++;
  console.log(`server: ${serverSockets} connections echoed and closed`);
  console.log(failures === 0 ? 'echo: all ok' : `echo: ${failures} FAILED`);
  process.exitCode = failures === 0 ? 0 : 1;
});
