// Tests for the grpc-js driver without the Go host: a grpc-js server on
// 127.0.0.1 stands in for the lab backends, the driver runs as a child process.
//
//   CONFORM_GRPC_JS=<npm prefix holding node_modules/@grpc/grpc-js> node --test drivers/node/test/
//
// (see drivers/node/README.md; install with drivers/node/install.sh <version> <dir>).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');

const DRIVER = path.join(__dirname, '..', 'driver.js');
const GRPC_JS_DIR = process.env.CONFORM_GRPC_JS || '';
const SKIP = GRPC_JS_DIR === ''
  ? 'CONFORM_GRPC_JS is not set: install grpc-js with drivers/node/install.sh 1.14.7 <dir> and set CONFORM_GRPC_JS=<dir>'
  : false;

let grpc = null;
let grpcVersion = null;
const servers = [];

function loadGrpc() {
  const pkgDir = path.join(path.resolve(GRPC_JS_DIR), 'node_modules', '@grpc', 'grpc-js');
  grpc = require(pkgDir);
  grpcVersion = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
}

// A lab backend lookalike: raw-bytes /conform.lab.Backend/Name returning the
// name, every response tagged with x-conform-backend. Metadata
// x-conform-delay-ms delays the answer.
function startBackend(name) {
  return new Promise((resolve, reject) => {
    const server = new grpc.Server();
    const ident = (x) => x;
    server.addService({
      Name: {
        path: '/conform.lab.Backend/Name',
        requestStream: false,
        responseStream: false,
        requestSerialize: ident,
        requestDeserialize: ident,
        responseSerialize: ident,
        responseDeserialize: ident,
      },
    }, {
      Name: (call, callback) => {
        const md = new grpc.Metadata();
        md.set('x-conform-backend', name);
        call.sendMetadata(md);
        const delay = Number((call.metadata.get('x-conform-delay-ms')[0] || '0').toString());
        const t = setTimeout(() => callback(null, Buffer.from(name)), delay);
        call.on('cancelled', () => clearTimeout(t));
      },
    });
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
      if (err) return reject(err);
      const [maj, min] = grpcVersion.split('.').map(Number);
      if (maj === 1 && min < 10) server.start();
      const s = { name, server, port, addr: `127.0.0.1:${port}` };
      servers.push(s);
      resolve(s);
    });
  });
}

// A loopback port with nothing listening on it.
function deadPort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

class Driver {
  constructor(env = {}) {
    this.proc = spawn(process.execPath, [DRIVER, '--grpc-js', GRPC_JS_DIR], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    this.lines = [];
    this.waiters = [];
    this.stderr = '';
    this.nextId = 1;
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
    this.proc.stderr.on('data', (d) => { this.stderr += d; });
    readline.createInterface({ input: this.proc.stdout }).on('line', (l) => {
      let o;
      try {
        o = JSON.parse(l);
      } catch (e) {
        o = { ev: '__not_json__', raw: l };
      }
      this.lines.push(o);
      this.poke();
    });
  }

  poke() {
    for (const w of this.waiters.slice()) {
      const i = this.lines.findIndex((o, k) => k >= w.from && w.pred(o));
      if (i >= 0) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.resolve(this.lines[i]);
      }
    }
  }

  // Resolves with the first line (at index >= from) matching pred.
  waitFor(pred, ms = 10000, from = 0, what = 'a line') {
    return new Promise((resolve, reject) => {
      const w = { pred, from, resolve };
      w.timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; lines:\n${this.lines.map((o) => JSON.stringify(o)).join('\n')}\nstderr:\n${this.stderr}`));
      }, ms);
      this.waiters.push(w);
      this.poke();
    });
  }

  writeRaw(text) {
    this.proc.stdin.write(text);
  }

  // Sends a command and waits for its reply (ok or error).
  async cmd(obj, ms = 10000) {
    const id = this.nextId++;
    this.proc.stdin.write(JSON.stringify({ id, ...obj }) + '\n');
    return this.waitFor((o) => o.id === id, ms, 0, `the reply to ${obj.op} (id ${id})`);
  }

  rpcResult(rpc, ms = 10000) {
    return this.waitFor((o) => o.ev === 'rpc-result' && o.rpc === rpc, ms, 0, `rpc-result ${rpc}`);
  }

  states() {
    return this.lines.filter((o) => o.ev === 'channel-state').map((o) => o.state);
  }

  async close() {
    const r = await this.cmd({ op: 'close' });
    assert.equal(r.ev, 'ok', JSON.stringify(r));
    const { code } = await this.exited;
    assert.equal(code, 0, `driver exit code; stderr:\n${this.stderr}`);
  }

  kill() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

const PICK_FIRST = JSON.stringify({ loadBalancingConfig: [{ pick_first: {} }] });
const ROUND_ROBIN = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

function noJunk(d) {
  for (const o of d.lines) assert.notEqual(o.ev, '__not_json__', `driver wrote a non-JSON line: ${o.raw}`);
}

let b1;
let b2;

before(async () => {
  if (SKIP) return;
  loadGrpc();
  b1 = await startBackend('b1');
  b2 = await startBackend('b2');
});

after(() => {
  for (const s of servers) s.server.forceShutdown();
});

test('hello names grpc-js, its installed version and what it can do', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  const r = await d.cmd({ op: 'hello' });
  assert.equal(r.ev, 'ok', JSON.stringify(r));
  const h = r.hello;
  assert.equal(h.protocol, 1);
  assert.equal(h.impl, 'grpc-js');
  assert.equal(h.version, grpcVersion);
  assert.equal(h.observes, 'every-change');
  for (const k of ['endpoints', 'mixed_families', 'service_config', 'shuffle', 'wait_for_ready', 'xds', 'health_check', 'idle_timeout']) {
    assert.equal(typeof h.can[k], 'boolean', `can.${k}`);
  }
  const [maj, min] = grpcVersion.split('.').map(Number);
  assert.equal(h.can.endpoints, maj > 1 || min >= 10, 'endpoints iff grpc-js >= 1.10');
  assert.equal(h.can.xds, false);
  // grpc-js does no client-side health checking (no healthCheckConfig).
  assert.equal(h.can.health_check, false);
  // The policies it has registered, so that a scenario naming another is
  // not-applicable instead of falling back to pick_first.
  assert.ok(h.policies.includes('pick_first') && h.policies.includes('round_robin'), JSON.stringify(h.policies));
  assert.ok(!h.policies.includes('ring_hash_experimental'), 'grpc-js registers ring_hash (through grpc-js-xds), not ring_hash_experimental');
  await d.close();
  noJunk(d);
});

// stopped resolves once the process pid is in the stopped state. A SIGSTOP
// takes effect only when one of the process's threads next runs, and a
// SIGCONT sent before then discards it (signal(7)): on a loaded machine the
// process would never stand still. Node has no waitid, so this reads the
// state in /proc on each turn of the loop.
async function stopped(pid) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')) return;
    if (Date.now() > deadline) throw new Error(`process ${pid} did not stop within 10 s of SIGSTOP`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('stall watch: a stopped process is reported as a stall, not claimed as stall_watch', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  const r = await d.cmd({ op: 'hello' });
  assert.equal(r.ev, 'ok', JSON.stringify(r));
  // Its watch is a worker thread, apart from the loop that runs grpc-js's
  // timers: evidence, not a claim (PROTOCOL.md, "Stalls").
  assert.equal(r.hello.can.stall_watch, false);
  await d.waitFor((o) => o.ev === 'log' && o.line === 'stall watch: running', 10000, 0, 'the stall watch running');
  const from = d.lines.length;
  const stoppedMs = 80;
  d.proc.kill('SIGSTOP');
  await stopped(d.proc.pid);
  await new Promise((resolve) => setTimeout(resolve, stoppedMs)); // the stimulus: the process stands still
  d.proc.kill('SIGCONT');
  const s = await d.waitFor((o) => o.ev === 'stall' && o.late_us >= (stoppedMs - 10) * 1000, 10000, from, 'a stall of the stop');
  assert.ok(Number.isInteger(s.late_us) && Number.isInteger(s.ago_us) && s.ago_us >= 0, JSON.stringify(s));
  assert.ok(s.late_us <= (stoppedMs + 200) * 1000, `a stall of ${s.late_us} µs for a stop of ${stoppedMs} ms`);
  await d.close();
  noJunk(d);
});

test('pick_first: READY, rpc OK with the backend header', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  const c = await d.cmd({ op: 'create', target: 'conform:///basic', service_config: PICK_FIRST });
  assert.equal(c.ev, 'ok', JSON.stringify(c));
  assert.equal(d.states()[0], 'IDLE', 'first report: the state right after create');
  const r = await d.cmd({ op: 'resolve', endpoints: [[b1.addr]] });
  assert.equal(r.ev, 'ok', JSON.stringify(r));
  await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'READY', 10000, 0, 'READY');
  const ok = await d.cmd({ op: 'rpc', rpc: 'r1', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000, metadata: { 'x-conform-hash': 'k1' } });
  assert.equal(ok.ev, 'ok', JSON.stringify(ok));
  const res = await d.rpcResult('r1');
  assert.deepEqual(res, { ev: 'rpc-result', rpc: 'r1', code: 'OK', backend: 'b1' });
  await d.close();
  const st = d.states();
  assert.deepEqual(st.slice(0, 2), ['IDLE', 'CONNECTING']);
  assert.ok(st.includes('READY'));
  assert.equal(st[st.length - 1], 'SHUTDOWN');
  for (let i = 1; i < st.length; i++) assert.notEqual(st[i], st[i - 1], `repeated state at ${i}: ${st}`);
  noJunk(d);
});

test('idle_timeout_ms: with no RPC for that long the channel goes IDLE; a bad value is refused', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  const h = (await d.cmd({ op: 'hello' })).hello;
  assert.equal(h.can.idle_timeout, true, 'grpc-js 1.14 has grpc.client_idle_timeout_ms');
  const bad = await d.cmd({ op: 'create', target: 'conform:///idle', service_config: PICK_FIRST, idle_timeout_ms: -1 });
  assert.equal(bad.ev, 'error', JSON.stringify(bad));
  const c = await d.cmd({ op: 'create', target: 'conform:///idle', service_config: PICK_FIRST, idle_timeout_ms: 1000 });
  assert.equal(c.ev, 'ok', JSON.stringify(c));
  await d.cmd({ op: 'resolve', endpoints: [[b1.addr]] });
  const rdy = await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'READY', 10000, 0, 'READY');
  await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'IDLE', 10000, d.lines.indexOf(rdy) + 1, 'IDLE after the idle timeout');
  await d.close();
  noJunk(d);
});

test('nothing listening: UNAVAILABLE, channel TRANSIENT_FAILURE, re-resolution requested', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  await d.cmd({ op: 'create', target: 'conform:///dead', service_config: PICK_FIRST });
  await d.cmd({ op: 'resolve', endpoints: [[`127.0.0.1:${await deadPort()}`]] });
  await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'TRANSIENT_FAILURE', 10000, 0, 'TRANSIENT_FAILURE');
  await d.cmd({ op: 'rpc', rpc: 'r1', method: '/conform.lab.Backend/Name', wait_for_ready: false, deadline_ms: 5000 });
  const res = await d.rpcResult('r1');
  assert.equal(res.code, 'UNAVAILABLE', JSON.stringify(res));
  assert.equal(typeof res.err, 'string');
  assert.equal(res.backend, undefined);
  await d.waitFor((o) => o.ev === 'resolve-now', 10000, 0, 'resolve-now');
  await d.close();
  noJunk(d);
});

test('deadlines: DEADLINE_EXCEEDED while waiting for ready and on a slow backend', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  await d.cmd({ op: 'create', target: 'conform:///deadline', service_config: PICK_FIRST });
  // No resolve yet: a wait-for-ready call queues until its deadline.
  await d.cmd({ op: 'rpc', rpc: 'queued', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 300 });
  const q = await d.rpcResult('queued');
  assert.equal(q.code, 'DEADLINE_EXCEEDED', JSON.stringify(q));
  await d.cmd({ op: 'resolve', endpoints: [[b1.addr]] });
  await d.cmd({ op: 'rpc', rpc: 'slow', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 300, metadata: { 'x-conform-delay-ms': '3000' } });
  const s = await d.rpcResult('slow');
  assert.equal(s.code, 'DEADLINE_EXCEEDED', JSON.stringify(s));
  await d.cmd({ op: 'rpc', rpc: 'fine', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 0 });
  assert.equal((await d.rpcResult('fine')).code, 'OK');
  await d.close();
  noJunk(d);
});

// untilBoth sends wait-for-ready RPCs named prefix0, prefix1, … one at a
// time until b1 and b2 have both answered, each RPC succeeding, for at most
// 10 s and 500 RPCs, and returns the backends that answered. round_robin picks only READY
// subchannels, and the driver shows no subchannel's state: an answer is the
// evidence that a backend's is READY. (Twelve RPCs 50 ms apart gave the
// second connection 600 ms, which a loaded machine can take.)
async function untilBoth(d, prefix) {
  const seen = new Set();
  const guard = Date.now() + 10000;
  for (let i = 0; seen.size < 2 && Date.now() < guard && i < 500; i++) {
    await d.cmd({ op: 'rpc', rpc: `${prefix}${i}`, method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
    const res = await d.rpcResult(`${prefix}${i}`);
    assert.equal(res.code, 'OK', JSON.stringify(res));
    seen.add(res.backend);
  }
  return seen;
}

test('round_robin over endpoints, one with a dead first address', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  const h = (await d.cmd({ op: 'hello' })).hello;
  await d.cmd({ op: 'create', target: 'conform:///rr', service_config: ROUND_ROBIN });
  const dead = `127.0.0.1:${await deadPort()}`;
  // With endpoints the dead address and b2 form one endpoint; without, flattened.
  const r = await d.cmd({ op: 'resolve', endpoints: [[b1.addr], [dead, b2.addr]] });
  assert.equal(r.ev, 'ok', JSON.stringify(r));
  if (!h.can.endpoints) await d.waitFor((o) => o.ev === 'log' && /flattening/.test(o.line), 2000, 0, 'the flattening log');
  await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'READY', 10000, 0, 'READY');
  const seen = await untilBoth(d, 'r');
  assert.deepEqual([...seen].sort(), ['b1', 'b2']);
  await d.close();
  noJunk(d);
});

test('config: a new service config mid-run switches pick_first to round_robin', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  const h = (await d.cmd({ op: 'hello' })).hello;
  assert.equal(h.can.config_update, true, 'grpc-js 1.14 keeps validateServiceConfig where the driver finds it');
  await d.cmd({ op: 'create', target: 'conform:///switch', service_config: PICK_FIRST });
  await d.cmd({ op: 'resolve', endpoints: [[b1.addr], [b2.addr]] });
  await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'READY', 10000, 0, 'READY');
  const before = new Set();
  for (let i = 0; i < 4; i++) {
    await d.cmd({ op: 'rpc', rpc: `p${i}`, method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
    before.add((await d.rpcResult(`p${i}`)).backend);
  }
  assert.deepEqual([...before], ['b1'], 'pick_first: every rpc to the first endpoint');
  const c = await d.cmd({ op: 'config', service_config: ROUND_ROBIN });
  assert.equal(c.ev, 'ok', JSON.stringify(c));
  const seen = await untilBoth(d, 's');
  assert.deepEqual([...seen].sort(), ['b1', 'b2'], 'round_robin after the config');
  const bad = await d.cmd({ op: 'config', service_config: '{not json' });
  assert.equal(bad.ev, 'error', JSON.stringify(bad));
  await d.close();
  noJunk(d);
});

test('a lost backend: the channel leaves READY, re-resolution is requested, a new update serves', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  const b3 = await startBackend('b3');
  await d.cmd({ op: 'hello' });
  await d.cmd({ op: 'create', target: 'conform:///lost', service_config: PICK_FIRST });
  await d.cmd({ op: 'resolve', endpoints: [[b3.addr]] });
  await d.cmd({ op: 'rpc', rpc: 'a', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  assert.equal((await d.rpcResult('a')).backend, 'b3');
  const mark = d.lines.length;
  b3.server.forceShutdown();
  await d.waitFor((o) => o.ev === 'channel-state' && o.state !== 'READY', 10000, mark, 'leaving READY');
  // grpc-js 1.14.7's pick_first goes IDLE without asking to re-resolve; the
  // next call leaves idle, which calls updateResolution: resolve-now either way.
  await d.cmd({ op: 'rpc', rpc: 'b', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  await d.waitFor((o) => o.ev === 'resolve-now', 10000, mark, 'resolve-now after the backend went away');
  await d.cmd({ op: 'resolve', endpoints: [[b1.addr]] });
  const res = await d.rpcResult('b');
  assert.equal(res.code, 'OK', JSON.stringify(res));
  assert.equal(res.backend, 'b1');
  await d.close();
  noJunk(d);
});

test('bad input gets error lines and never kills the driver', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  let mark = d.lines.length;
  d.writeRaw('this is not json\n');
  const e1 = await d.waitFor((o) => o.ev === 'error', 2000, mark, 'error for non-JSON');
  assert.equal(e1.id, undefined);
  mark = d.lines.length;
  d.writeRaw('[1,2]\n{"op":"hello"}\n');
  await d.waitFor((o, k) => o.ev === 'error', 2000, mark + 1, 'two errors');
  const bad = [
    { op: 'nope' },
    { op: 'resolve', endpoints: [['127.0.0.1:1']] }, // before create
    { op: 'rpc', rpc: 'x', method: '/a/b' }, // before create
    { op: 'create' },
    { op: 'create', target: 'conform:///x', service_config: '{not json' },
    { op: 'create', target: 'conform:///x', service_config: 7 },
  ];
  for (const b of bad) {
    const r = await d.cmd(b);
    assert.equal(r.ev, 'error', `${JSON.stringify(b)} -> ${JSON.stringify(r)}`);
    assert.equal(typeof r.err, 'string');
  }
  const c = await d.cmd({ op: 'create', target: 'conform:///x', service_config: '' });
  assert.equal(c.ev, 'ok', JSON.stringify(c));
  const bad2 = [
    { op: 'create', target: 'conform:///again' },
    { op: 'resolve' },
    { op: 'resolve', endpoints: 'x' },
    { op: 'resolve', endpoints: [[]] },
    { op: 'resolve', endpoints: [['localhost:80']] },
    { op: 'resolve', endpoints: [['::1:80']] },
    { op: 'resolve', endpoints: [['[::1]']] },
    { op: 'resolve', endpoints: [['127.0.0.1:99999']] },
    { op: 'rpc', method: '/a/b' },
    { op: 'rpc', rpc: 'x', method: 'nope' },
    { op: 'rpc', rpc: 'x', method: '/a/b', deadline_ms: -1 },
    { op: 'rpc', rpc: 'x', method: '/a/b', wait_for_ready: 'yes' },
    { op: 'rpc', rpc: 'x', method: '/a/b', metadata: { 'Bad Key!': 'v' } },
    { op: 'rpc', rpc: 'x', method: '/a/b', metadata: { k: 3 } },
  ];
  for (const b of bad2) {
    const r = await d.cmd(b);
    assert.equal(r.ev, 'error', `${JSON.stringify(b)} -> ${JSON.stringify(r)}`);
  }
  // Still alive and working.
  await d.cmd({ op: 'resolve', endpoints: [[b2.addr]] });
  await d.cmd({ op: 'rpc', rpc: 'ok', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  assert.equal((await d.rpcResult('ok')).backend, 'b2');
  await d.close();
  noJunk(d);
});

test('stdin EOF: in-flight rpcs reported, exit 0', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  await d.cmd({ op: 'create', target: 'conform:///eof', service_config: PICK_FIRST });
  await d.cmd({ op: 'resolve', endpoints: [[b1.addr]] });
  await d.cmd({ op: 'rpc', rpc: 'hang', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 0, metadata: { 'x-conform-delay-ms': '60000' } });
  await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'READY', 10000, 0, 'READY');
  d.proc.stdin.end();
  const { code } = await d.exited;
  assert.equal(code, 0);
  const res = d.lines.find((o) => o.ev === 'rpc-result' && o.rpc === 'hang');
  assert.ok(res, 'the in-flight rpc is reported');
  assert.equal(res.code, 'CANCELLED');
  assert.equal(d.states().at(-1), 'SHUTDOWN');
  noJunk(d);
});

test('dns/ipv4 targets go to grpc-js as they are', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  await d.cmd({ op: 'create', target: `ipv4:${b1.addr}`, service_config: PICK_FIRST });
  const r = await d.cmd({ op: 'resolve', endpoints: [[b2.addr]] });
  assert.equal(r.ev, 'error', 'resolve needs a conform:/// target');
  await d.cmd({ op: 'rpc', rpc: 'r', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  assert.equal((await d.rpcResult('r')).backend, 'b1');
  await d.close();
  noJunk(d);
});

test('CONFORM_GRPC_JS_LOG_EVENTS=1 turns grpc-js traces into log events; stdout stays protocol-only', { skip: SKIP }, async (t) => {
  const d = new Driver({ CONFORM_GRPC_JS_LOG_EVENTS: '1', GRPC_VERBOSITY: 'DEBUG', GRPC_TRACE: 'all' });
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  await d.cmd({ op: 'create', target: 'conform:///trace', service_config: PICK_FIRST });
  await d.cmd({ op: 'resolve', endpoints: [[b1.addr]] });
  await d.cmd({ op: 'rpc', rpc: 'r', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  assert.equal((await d.rpcResult('r')).backend, 'b1');
  await d.waitFor((o) => o.ev === 'log' && / subchannel /.test(o.line), 2000, 0, 'a subchannel trace line');
  await d.close();
  noJunk(d);
});

test('idle timeout: the resolver is destroyed and restarted, the last update handed over again', { skip: SKIP }, async (t) => {
  const d = new Driver({ CONFORM_GRPC_JS_CHANNEL_OPTIONS: JSON.stringify({ 'grpc.client_idle_timeout_ms': 1000 }) });
  t.after(() => d.kill());
  await d.cmd({ op: 'hello' });
  await d.cmd({ op: 'create', target: 'conform:///idle', service_config: PICK_FIRST });
  await d.cmd({ op: 'resolve', endpoints: [[b2.addr]] });
  await d.cmd({ op: 'rpc', rpc: 'a', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  assert.equal((await d.rpcResult('a')).backend, 'b2');
  const [maj, min] = grpcVersion.split('.').map(Number);
  if (maj === 1 && min < 9) {
    // grpc.client_idle_timeout_ms arrived in grpc-js 1.9.
    await d.close();
    return;
  }
  const mark = d.lines.length;
  await d.waitFor((o) => o.ev === 'channel-state' && o.state === 'IDLE', 5000, mark, 'IDLE after the idle timeout');
  await d.cmd({ op: 'rpc', rpc: 'b', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  const res = await d.rpcResult('b');
  assert.equal(res.code, 'OK', JSON.stringify(res));
  assert.equal(res.backend, 'b2');
  const after = d.lines.slice(mark);
  assert.ok(after.some((o) => o.ev === 'log' && /resolver: started/.test(o.line)), 'the resolver restarted');
  assert.ok(!after.some((o) => o.ev === 'resolve-now'), 'leaving idle is not a resolve-now');
  await d.close();
  noJunk(d);
});

test('dual-stack endpoint: a dead IPv6 address first, the IPv4 backend serves', { skip: SKIP }, async (t) => {
  const d = new Driver();
  t.after(() => d.kill());
  const h = (await d.cmd({ op: 'hello' })).hello;
  await d.cmd({ op: 'create', target: 'conform:///dual', service_config: PICK_FIRST });
  const r = await d.cmd({ op: 'resolve', endpoints: [[`[::1]:${await deadPort()}`, b1.addr]] });
  assert.equal(r.ev, 'ok', JSON.stringify(r));
  assert.equal(h.can.mixed_families, true);
  await d.cmd({ op: 'rpc', rpc: 'r', method: '/conform.lab.Backend/Name', wait_for_ready: true, deadline_ms: 5000 });
  const res = await d.rpcResult('r');
  assert.equal(res.code, 'OK', JSON.stringify(res));
  assert.equal(res.backend, 'b1');
  await d.close();
  noJunk(d);
});
