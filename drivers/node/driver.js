#!/usr/bin/env node
// conform driver for grpc-js: speaks the conform driver protocol, version 1
// (harness/driver/PROTOCOL.md) on stdin/stdout. Plain CommonJS, no build step.
//
//   node drivers/node/driver.js [--grpc-js <dir>]
//
// <dir> is where @grpc/grpc-js was installed: the npm prefix (the directory
// holding node_modules/), a node_modules directory, or the package directory
// itself. Without --grpc-js, @grpc/grpc-js is found through NODE_PATH (or the
// usual node_modules lookup). stdout carries protocol lines only; everything
// else (grpc-js logs included) goes to stderr.
'use strict';

const fs = require('fs');
const net = require('net');
const path = require('path');
const readline = require('readline');
const { Worker } = require('worker_threads');

// grpc-js reads GRPC_VERBOSITY when it is loaded: default to ERROR, keep a
// value the caller set.
if (!process.env.GRPC_VERBOSITY) process.env.GRPC_VERBOSITY = 'ERROR';

// Nothing but protocol lines on stdout: send every console method to stderr.
for (const m of ['log', 'info', 'debug', 'warn', 'trace']) {
  // eslint-disable-next-line no-console
  console[m] = console.error.bind(console);
}

const PROTOCOL = 1;
const SCHEME = 'conform';
const CLOSE_WAIT_MS = 1000; // how long `close` waits for cancelled RPCs to report

const STATUS_NAMES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION',
  'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS',
  'UNAUTHENTICATED',
];
const STATE_NAMES = ['IDLE', 'CONNECTING', 'READY', 'TRANSIENT_FAILURE', 'SHUTDOWN'];

// ---------------------------------------------------------------- output

let stdoutBroken = false;
process.stdout.on('error', (e) => {
  // The reader is gone (EPIPE): nobody is left to tell; stop quietly.
  stdoutBroken = true;
  process.stderr.write(`conform-driver: stdout: ${e.message}; exiting\n`);
  process.exit(0);
});

function send(obj) {
  if (stdoutBroken) return;
  // Pipes and files are written synchronously on Linux, so lines keep their
  // order and are out before process.exit.
  process.stdout.write(JSON.stringify(obj) + '\n');
}
function reply(id, extra) {
  const o = { id, ev: 'ok' };
  if (extra) Object.assign(o, extra);
  send(o);
}
function replyError(id, err) {
  const o = {};
  if (id !== undefined) o.id = id;
  o.ev = 'error';
  o.err = String(err);
  send(o);
}
function logEvent(line) {
  send({ ev: 'log', line: String(line) });
}
function diag(msg) {
  process.stderr.write(`conform-driver: ${msg}\n`);
}

// ---------------------------------------------------------------- arguments

function usage(msg) {
  process.stderr.write(`conform-driver: ${msg}\nusage: node driver.js [--grpc-js <dir>]\n`);
  process.exit(2);
}

let grpcJsDir = null;
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--grpc-js') {
      if (i + 1 >= argv.length) usage('--grpc-js needs a directory');
      grpcJsDir = argv[++i];
    } else if (a.startsWith('--grpc-js=')) {
      grpcJsDir = a.slice('--grpc-js='.length);
    } else if (a === '-h' || a === '--help') {
      process.stderr.write('usage: node driver.js [--grpc-js <dir>]\n');
      process.exit(0);
    } else {
      usage(`unknown argument ${JSON.stringify(a)}`);
    }
  }
}

// ---------------------------------------------------------------- loading grpc-js

// Returns {grpc, version, pkgDir} or throws with a readable reason.
function loadGrpcJs(dir) {
  let main;
  if (dir) {
    const abs = path.resolve(dir);
    if (!fs.existsSync(abs)) throw new Error(`--grpc-js ${abs}: no such directory`);
    // Accept the package directory itself, a node_modules directory, or an npm prefix.
    const candidates = [];
    const pj = path.join(abs, 'package.json');
    if (fs.existsSync(pj)) {
      try {
        if (JSON.parse(fs.readFileSync(pj, 'utf8')).name === '@grpc/grpc-js') candidates.push(abs);
      } catch (_) { /* not the package */ }
    }
    candidates.push(path.join(abs, '@grpc', 'grpc-js'));
    candidates.push(path.join(abs, 'node_modules', '@grpc', 'grpc-js'));
    const found = candidates.find((c) => fs.existsSync(path.join(c, 'package.json')));
    if (!found) throw new Error(`--grpc-js ${abs}: no @grpc/grpc-js there (looked for ${candidates.join(', ')})`);
    main = require.resolve(found);
  } else {
    main = require.resolve('@grpc/grpc-js');
  }
  const grpc = require(main);
  // Walk up from the entry point to the package's own package.json.
  let d = path.dirname(main);
  let version = null;
  let pkgDir = null;
  for (;;) {
    const pj = path.join(d, 'package.json');
    if (fs.existsSync(pj)) {
      try {
        const p = JSON.parse(fs.readFileSync(pj, 'utf8'));
        if (p.name === '@grpc/grpc-js') { version = String(p.version); pkgDir = d; break; }
      } catch (_) { /* keep walking */ }
    }
    const up = path.dirname(d);
    if (up === d) break;
    d = up;
  }
  if (!version) throw new Error(`loaded ${main} but found no @grpc/grpc-js package.json above it`);
  return { grpc, version, pkgDir };
}

// Registers @grpc/grpc-js-xds when it is installed beside grpc-js (install.sh
// with "xds"): the xds:/// scheme, reading its bootstrap from the environment
// (GRPC_XDS_BOOTSTRAP_CONFIG, which conform sets). It loads grpc-js through
// the same path, so it registers into the very instance the driver uses.
// Returns the grpc-js-xds version, or null when it is not installed.
function registerXds(pkgDir) {
  const dir = path.join(path.dirname(pkgDir), 'grpc-js-xds');
  if (!fs.existsSync(path.join(dir, 'package.json'))) return null;
  const version = String(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version);
  require(require.resolve(dir)).register();
  return version;
}

let grpc = null;
let grpcVersion = null;
let grpcPkgDir = null;
let xdsVersion = null;
let loadError = null;
try {
  ({ grpc, version: grpcVersion, pkgDir: grpcPkgDir } = loadGrpcJs(grpcJsDir));
  diag(`@grpc/grpc-js ${grpcVersion} from ${grpcPkgDir}`);
} catch (e) {
  loadError = `cannot load @grpc/grpc-js: ${firstLine(e)}`;
  diag(loadError);
}
if (!loadError) {
  try {
    xdsVersion = registerXds(grpcPkgDir);
    if (xdsVersion) diag(`@grpc/grpc-js-xds ${xdsVersion} registered`);
  } catch (e) {
    loadError = `cannot load @grpc/grpc-js-xds: ${firstLine(e)}`;
    diag(loadError);
  }
}

// firstLine is an error's message without require's "Require stack", which
// follows on stderr.
function firstLine(e) {
  return String(e && e.message ? e.message : e).split('\n')[0];
}

// What this grpc-js can express.
// The standard LB policy names conform's scenarios use (as
// drivers/go/protocol's KnownPolicies lists them).
const KNOWN_POLICIES = [
  'pick_first', 'round_robin', 'ring_hash_experimental', 'weighted_target_experimental',
  'priority_experimental', 'outlier_detection_experimental', 'xds_override_host_experimental',
  'least_request_experimental', 'weighted_round_robin',
];

// policies lists the known policies this grpc-js has registered (with
// grpc-js-xds's, when it is loaded), so that conform makes a scenario naming
// another not-applicable rather than let grpc-js fall back to its default
// policy; undefined where grpc-js cannot tell (isLoadBalancerNameRegistered
// is missing).
function policies() {
  const registered = grpc.experimental.isLoadBalancerNameRegistered;
  if (typeof registered !== 'function') return undefined;
  return KNOWN_POLICIES.filter((name) => registered(name));
}

function capabilities() {
  // Endpoints (several addresses each) arrived in grpc-js 1.10 together with
  // experimental.endpointToString; before that resolvers hand over a flat address list.
  const endpoints = typeof grpc.experimental.endpointToString === 'function';
  let shuffle = false;
  try {
    const pf = fs.readFileSync(path.join(grpcPkgDir, 'build', 'src', 'load-balancer-pick-first.js'), 'utf8');
    shuffle = pf.includes('shuffleAddressList');
  } catch (_) { /* unknown layout: say no */ }
  // Client-side health checking (gRFC A17): grpc-js (1.14 included) reads no
  // healthCheckConfig from the service config and its subchannels report
  // themselves always healthy (src/subchannel.ts, isHealthy). Claimed only
  // for a grpc-js whose service config parser knows the field.
  let healthCheck = false;
  try {
    const sc = fs.readFileSync(path.join(grpcPkgDir, 'build', 'src', 'service-config.js'), 'utf8');
    healthCheck = sc.includes('healthCheckConfig');
  } catch (_) { /* unknown layout: say no */ }
  return {
    endpoints,
    mixed_families: true,
    service_config: true,
    shuffle,
    wait_for_ready: true,
    xds: xdsVersion !== null,
    xds_pick_first: xdsPickFirst(),
    health_check: healthCheck,
    // Not claimed: the watch (below) runs on a worker thread, not on the
    // event loop that runs grpc-js's timers, and under load the loop's
    // thread is descheduled where the worker is not (a 41.9 ms late
    // Connection Attempt Delay with no stall seen, at load 14). Its stall
    // events are evidence all the same.
    stall_watch: false,
    config_update: serviceConfigParser() !== null,
    idle_timeout: idleTimeoutOption(),
  };
}

// serviceConfigParser is grpc-js's own service config validator (the one it
// applies to grpc.service_config), which the `config` command uses to hand
// the resolver listener a parsed service config; null where this grpc-js
// keeps it elsewhere.
function serviceConfigParser() {
  try {
    const m = require(path.join(grpcPkgDir, 'build', 'src', 'service-config.js'));
    return typeof m.validateServiceConfig === 'function' ? m.validateServiceConfig : null;
  } catch (_) {
    return null;
  }
}

// idleTimeoutOption says whether this grpc-js knows the channel option
// grpc.client_idle_timeout_ms (create's idle_timeout_ms).
function idleTimeoutOption() {
  try {
    const co = fs.readFileSync(path.join(grpcPkgDir, 'build', 'src', 'channel-options.js'), 'utf8');
    return co.includes('grpc.client_idle_timeout_ms');
  } catch (_) {
    return false; // unknown layout: say no
  }
}

// xdsPickFirst says whether the loaded grpc-js-xds reads a cluster's
// load_balancing_policy naming pick_first (A62): its LB policy registry has
// a converter for it.
function xdsPickFirst() {
  if (xdsVersion === null) return false;
  try {
    const dir = path.join(path.dirname(grpcPkgDir), 'grpc-js-xds', 'build', 'src', 'lb-policy-registry');
    return fs.existsSync(path.join(dir, 'pick-first.js'));
  } catch (_) {
    return false;
  }
}

// ---------------------------------------------------------------- the conform resolver

// State shared by the driver and the resolver(s) grpc-js constructs for the channel.
const resolverState = {
  latest: null,   // the last `resolve` command's endpoints: [[{host, port}, ...], ...]
  serviceConfig: null, // the last `config` command's service config, parsed by grpc-js; null: none
  gen: 0,         // bumped on every `resolve`
  live: new Set(),
};

function deliver(r) {
  if (!r.started || resolverState.latest === null) return;
  r.deliveredGen = resolverState.gen;
  const endpoints = resolverState.latest.map((addrs) => ({ addresses: addrs.map((a) => ({ host: a.host, port: a.port })) }));
  const listener = r.listener;
  let accepted;
  try {
    if (typeof listener === 'function') {
      // grpc-js >= 1.14: listener(StatusOr<Endpoint[]>, attributes, serviceConfig|null, resolutionNote)
      const sc = resolverState.serviceConfig === null ? null : { ok: true, value: resolverState.serviceConfig };
      accepted = listener({ ok: true, value: endpoints }, {}, sc, '');
    } else if (r.endpointsApi) {
      // grpc-js 1.10 .. 1.13: onSuccessfulResolution(Endpoint[], serviceConfig, serviceConfigError, configSelector, attributes)
      listener.onSuccessfulResolution(endpoints, resolverState.serviceConfig, null, null, {});
    } else {
      // grpc-js < 1.10: a flat address list.
      const flat = [];
      for (const e of endpoints) for (const a of e.addresses) flat.push(a);
      listener.onSuccessfulResolution(flat, resolverState.serviceConfig, null, null, {});
    }
  } catch (e) {
    diag(`resolver listener threw: ${e && e.stack ? e.stack : e}`);
    send({ ev: 'error', err: `grpc-js rejected the resolver update: ${e && e.message ? e.message : e}` });
    return;
  }
  if (accepted === false) logEvent('resolver: grpc-js did not accept the update');
}

function makeResolverClass() {
  const endpointsApi = typeof grpc.experimental.endpointToString === 'function';
  return class ConformResolver {
    constructor(target, listener /* , channelOptions */) {
      this.target = target;
      this.listener = listener;
      this.endpointsApi = endpointsApi;
      this.started = false;   // updateResolution called since construction / destroy
      this.deliveredGen = -1;
      resolverState.live.add(this);
    }

    // The first call after construction (or after destroy, when the channel
    // left idle) starts the resolver, like grpc-go building its resolver: it is
    // logged, not reported as resolve-now, and hands over the latest update if
    // there is one. Every later call is grpc-js asking to re-resolve:
    // reported as `resolve-now`; addresses still come only from `resolve`.
    updateResolution() {
      if (!this.started) {
        this.started = true;
        logEvent('resolver: started (initial updateResolution)');
        if (resolverState.latest !== null) {
          // Never call the listener synchronously with updateResolution.
          process.nextTick(() => {
            if (this.started && this.deliveredGen !== resolverState.gen) deliver(this);
          });
        }
        return;
      }
      send({ ev: 'resolve-now' });
    }

    destroy() {
      this.started = false;
      this.deliveredGen = -1;
      // Kept in resolverState.live: grpc-js may call updateResolution again
      // after destroy (leaving idle), and then gets the latest update.
    }

    static getDefaultAuthority(target) {
      return target.path || 'conform';
    }
  };
}

// ---------------------------------------------------------------- address parsing

// "ip:port" or "[ipv6]:port" -> {host, port}; throws with a reason.
function parseAddr(s) {
  if (typeof s !== 'string') throw new Error(`address ${JSON.stringify(s)} is not a string`);
  let host;
  let portText;
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close < 0 || s[close + 1] !== ':') throw new Error(`address ${JSON.stringify(s)}: want [ipv6]:port`);
    host = s.slice(1, close);
    portText = s.slice(close + 2);
    if (!net.isIPv6(host)) throw new Error(`address ${JSON.stringify(s)}: ${JSON.stringify(host)} is not an IPv6 address`);
  } else {
    const colon = s.lastIndexOf(':');
    if (colon < 0) throw new Error(`address ${JSON.stringify(s)}: want ip:port`);
    host = s.slice(0, colon);
    portText = s.slice(colon + 1);
    if (!net.isIPv4(host)) {
      throw new Error(`address ${JSON.stringify(s)}: ${JSON.stringify(host)} is not an IPv4 address (IPv6 goes in brackets)`);
    }
  }
  if (!/^[0-9]{1,5}$/.test(portText)) throw new Error(`address ${JSON.stringify(s)}: bad port`);
  const port = Number(portText);
  if (port < 1 || port > 65535) throw new Error(`address ${JSON.stringify(s)}: port out of range`);
  return { host, port };
}

// ---------------------------------------------------------------- the channel

let client = null;
let channel = null;
let channelTarget = null;
let usesConformResolver = false;
const calls = new Map(); // rpc id -> {call, done}

function stateName(s) {
  return STATE_NAMES[s] || `UNKNOWN_STATE_${s}`;
}

function watchState(ch, last) {
  try {
    ch.watchConnectivityState(last, Infinity, (err) => {
      if (err) {
        diag(`watchConnectivityState: ${err.message}`);
        return;
      }
      let s;
      try {
        s = ch.getConnectivityState(false);
      } catch (e) {
        diag(`getConnectivityState: ${e.message}`);
        return;
      }
      if (s !== last) send({ ev: 'channel-state', state: stateName(s) });
      if (s !== grpc.connectivityState.SHUTDOWN) watchState(ch, s);
    });
  } catch (e) {
    // The channel is shut down.
    diag(`watchConnectivityState: ${e.message}`);
  }
}

// ---------------------------------------------------------------- commands

function need(cond, msg) {
  if (!cond) throw new Error(msg);
}

const handlers = {
  hello(cmd) {
    if (loadError) throw new Error(loadError);
    reply(cmd.id, {
      hello: {
        protocol: PROTOCOL,
        impl: 'grpc-js',
        version: grpcVersion,
        can: capabilities(),
        policies: policies(),
        observes: 'every-change',
      },
    });
  },

  create(cmd) {
    if (loadError) throw new Error(loadError);
    need(client === null, 'a channel was already created (one per driver)');
    need(typeof cmd.target === 'string' && cmd.target !== '', 'create needs a target');
    const sc = cmd.service_config === undefined || cmd.service_config === null ? '' : cmd.service_config;
    need(typeof sc === 'string', 'service_config must be JSON text (a string)');
    const options = {};
    // Extra grpc-js channel options for experiments and tests (not part of the
    // protocol): CONFORM_GRPC_JS_CHANNEL_OPTIONS='{"grpc.client_idle_timeout_ms":1000}'.
    const extra = process.env.CONFORM_GRPC_JS_CHANNEL_OPTIONS;
    if (extra) {
      let o;
      try {
        o = JSON.parse(extra);
      } catch (e) {
        throw new Error(`CONFORM_GRPC_JS_CHANNEL_OPTIONS is not valid JSON: ${e.message}`);
      }
      need(o !== null && typeof o === 'object' && !Array.isArray(o), 'CONFORM_GRPC_JS_CHANNEL_OPTIONS must be a JSON object');
      Object.assign(options, o);
      logEvent(`channel options from CONFORM_GRPC_JS_CHANNEL_OPTIONS: ${JSON.stringify(o)}`);
    }
    if (cmd.idle_timeout_ms !== undefined && cmd.idle_timeout_ms !== null) {
      need(Number.isInteger(cmd.idle_timeout_ms) && cmd.idle_timeout_ms > 0, 'idle_timeout_ms must be a positive integer');
      need(idleTimeoutOption(), 'this grpc-js has no grpc.client_idle_timeout_ms channel option');
      options['grpc.client_idle_timeout_ms'] = cmd.idle_timeout_ms;
    }
    if (sc.trim() !== '') {
      try {
        JSON.parse(sc);
      } catch (e) {
        throw new Error(`service_config is not valid JSON: ${e.message}`);
      }
      options['grpc.service_config'] = sc;
    }
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(cmd.target);
    usesConformResolver = !!scheme && scheme[1].toLowerCase() === SCHEME;
    let c;
    try {
      c = new grpc.Client(cmd.target, grpc.credentials.createInsecure(), options);
    } catch (e) {
      throw new Error(`grpc-js refused the channel: ${e.message}`);
    }
    client = c;
    channel = c.getChannel();
    channelTarget = cmd.target;
    const s0 = channel.getConnectivityState(false);
    send({ ev: 'channel-state', state: stateName(s0) });
    watchState(channel, s0);
    channel.getConnectivityState(true); // exit idle: start connecting now
    reply(cmd.id);
  },

  resolve(cmd) {
    need(client !== null, 'no channel: send create first');
    need(usesConformResolver, `the channel's target ${JSON.stringify(channelTarget)} does not use the conform resolver`);
    need(Array.isArray(cmd.endpoints), 'resolve needs endpoints: a list of lists of "ip:port"');
    const eps = cmd.endpoints.map((ep, i) => {
      need(Array.isArray(ep), `endpoint ${i} is not a list of addresses`);
      need(ep.length > 0, `endpoint ${i} has no addresses`);
      return ep.map(parseAddr);
    });
    const endpointsApi = typeof grpc.experimental.endpointToString === 'function';
    if (!endpointsApi && eps.some((ep) => ep.length > 1)) {
      logEvent('resolver: this grpc-js has no endpoints; flattening endpoints with several addresses');
    }
    resolverState.latest = eps;
    resolverState.gen++;
    for (const r of resolverState.live) deliver(r);
    reply(cmd.id);
  },

  // A new service config for the channel, from its conform resolver with the
  // last resolve command's endpoints (and with every resolve after it), as a
  // resolver that returns service configs gives it.
  config(cmd) {
    need(client !== null, 'no channel: send create first');
    need(usesConformResolver, `the channel's target ${JSON.stringify(channelTarget)} does not use the conform resolver`);
    need(typeof cmd.service_config === 'string' && cmd.service_config.trim() !== '', 'config needs service_config: JSON text');
    const parse = serviceConfigParser();
    need(parse !== null, 'this grpc-js has no service config parser the driver can reach');
    let sc;
    try {
      sc = parse(JSON.parse(cmd.service_config));
    } catch (e) {
      throw new Error(`grpc-js refused the service config: ${e.message}`);
    }
    resolverState.serviceConfig = sc;
    resolverState.gen++;
    for (const r of resolverState.live) deliver(r);
    reply(cmd.id);
  },

  rpc(cmd) {
    need(client !== null, 'no channel: send create first');
    need((typeof cmd.rpc === 'string' && cmd.rpc !== '') || typeof cmd.rpc === 'number', 'rpc needs an rpc id');
    const rpcId = cmd.rpc;
    need(!calls.has(String(rpcId)), `rpc ${JSON.stringify(rpcId)} is still in flight`);
    need(typeof cmd.method === 'string' && cmd.method.startsWith('/'), 'rpc needs a method such as /conform.lab.Backend/Name');
    const dl = cmd.deadline_ms === undefined || cmd.deadline_ms === null ? 0 : cmd.deadline_ms;
    need(typeof dl === 'number' && Number.isFinite(dl) && dl >= 0, 'deadline_ms must be a number >= 0');
    const wfr = cmd.wait_for_ready === undefined || cmd.wait_for_ready === null ? false : cmd.wait_for_ready;
    need(typeof wfr === 'boolean', 'wait_for_ready must be true or false');
    const md = new grpc.Metadata();
    if (cmd.metadata !== undefined && cmd.metadata !== null) {
      need(typeof cmd.metadata === 'object' && !Array.isArray(cmd.metadata), 'metadata must be an object of strings');
      for (const [k, v] of Object.entries(cmd.metadata)) {
        const vals = Array.isArray(v) ? v : [v];
        for (const one of vals) {
          need(typeof one === 'string', `metadata ${JSON.stringify(k)}: values must be strings`);
          try {
            md.add(k, k.toLowerCase().endsWith('-bin') ? Buffer.from(one) : one);
          } catch (e) {
            throw new Error(`metadata ${JSON.stringify(k)}: ${e.message}`);
          }
        }
      }
    }
    if (wfr) md.setOptions({ waitForReady: true });
    const opts = {};
    if (dl > 0) opts.deadline = Date.now() + dl;

    const entry = { call: null, backend: undefined, done: false };
    calls.set(String(rpcId), entry);
    const ident = (x) => x;
    let call;
    try {
      call = client.makeUnaryRequest(cmd.method, ident, ident, Buffer.alloc(0), md, opts, (err, _resp) => {
        if (entry.done) return;
        entry.done = true;
        calls.delete(String(rpcId));
        const ev = { ev: 'rpc-result', rpc: rpcId };
        if (!err) {
          ev.code = 'OK';
          if (entry.backend !== undefined) ev.backend = entry.backend;
        } else {
          const code = typeof err.code === 'number' ? err.code : 2;
          ev.code = STATUS_NAMES[code] || `CODE_${code}`;
          ev.err = err.details !== undefined ? String(err.details) : String(err.message);
        }
        send(ev);
        if (pendingDrain && calls.size === 0) pendingDrain();
      });
    } catch (e) {
      calls.delete(String(rpcId));
      throw new Error(`grpc-js refused the call: ${e.message}`);
    }
    entry.call = call;
    call.on('metadata', (m) => {
      const v = m.get('x-conform-backend');
      if (v.length > 0) entry.backend = Buffer.isBuffer(v[0]) ? v[0].toString() : String(v[0]);
    });
    call.on('error', () => { /* reported through the callback */ });
    reply(cmd.id);
  },
};

// ---------------------------------------------------------------- shutdown

let closing = false;
let pendingDrain = null;

// Close the channel, cancel what is still in flight, wait briefly for the
// results to be reported, then reply (if asked by `close`) and exit 0.
function shutdown(closeId) {
  if (closing) return;
  closing = true;
  if (client !== null) {
    try {
      client.close();
    } catch (e) {
      diag(`close: ${e.message}`);
    }
  }
  for (const entry of calls.values()) {
    try {
      if (entry.call) entry.call.cancel();
    } catch (e) {
      diag(`cancel: ${e.message}`);
    }
  }
  const finish = () => {
    pendingDrain = null;
    if (closeId !== undefined) reply(closeId);
    process.exit(0);
  };
  if (calls.size === 0) {
    // Let channel-state / results queued on nextTick go out first.
    setImmediate(finish);
    return;
  }
  const timer = setTimeout(() => {
    for (const [rpcId, entry] of calls) {
      if (!entry.done) logEvent(`rpc ${rpcId}: no result ${CLOSE_WAIT_MS} ms after cancel at close`);
    }
    finish();
  }, CLOSE_WAIT_MS);
  pendingDrain = () => {
    clearTimeout(timer);
    setImmediate(finish);
  };
}

// ---------------------------------------------------------------- stall watch

// The stall watch (PROTOCOL.md, "Stalls"): a worker thread of this process
// re-arms a timer of its own event loop every STALL_STEP_MS and measures
// how late each wake-up is; a wake-up STALL_THRESHOLD_MS late or more is a
// stall of this process, the machine not running it. A worker, not a timer
// of the main loop: the main loop also runs grpc-js's own synchronous work
// (ms at a time when it first resolves), which is the client's behaviour,
// not a stall, and must not make its timer checks inconclusive; the watch
// sees what conform's own watch sees (the OS scheduling the process), as
// the Go driver's does. The worker hands each stall to this thread, which
// writes it with how long ago it ended (ago_us), so a main loop busy in
// between does not move it. It does not keep the process alive.
const STALL_STEP_MS = 2;
const STALL_THRESHOLD_MS = 4;
const STALL_WORKER = `
const { parentPort } = require('worker_threads');
let before = process.hrtime.bigint();
const wake = () => {
  const now = process.hrtime.bigint();
  const lateUs = Number((now - before) / 1000n) - ${STALL_STEP_MS * 1000};
  if (lateUs >= ${STALL_THRESHOLD_MS * 1000}) parentPort.postMessage({ lateUs, wokeNs: now });
  before = process.hrtime.bigint();
  setTimeout(wake, ${STALL_STEP_MS});
};
setTimeout(wake, ${STALL_STEP_MS});
parentPort.postMessage({ running: true });
`;
function watchStalls() {
  let worker;
  try {
    worker = new Worker(STALL_WORKER, { eval: true });
  } catch (e) {
    diag(`stall watch: ${e.message}`);
    return;
  }
  worker.on('message', (m) => {
    if (m.running) {
      // A worker takes tens of ms to start: from this line on its stalls
      // are seen (a test waits for it before it stops the process).
      logEvent('stall watch: running');
      return;
    }
    const agoUs = Number((process.hrtime.bigint() - m.wokeNs) / 1000n);
    send({ ev: 'stall', late_us: m.lateUs, ago_us: Math.max(0, agoUs) });
  });
  worker.on('error', (e) => diag(`stall watch: ${e.message}`));
  worker.unref();
}

// ---------------------------------------------------------------- main loop

function handleLine(line) {
  if (line.trim() === '') return;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (e) {
    replyError(undefined, `malformed command (not JSON): ${e.message}`);
    return;
  }
  if (cmd === null || typeof cmd !== 'object' || Array.isArray(cmd)) {
    replyError(undefined, 'malformed command: not a JSON object');
    return;
  }
  const id = cmd.id;
  if (id === undefined || id === null || (typeof id !== 'number' && typeof id !== 'string')) {
    replyError(undefined, `malformed command: missing or bad id (op ${JSON.stringify(cmd.op)})`);
    return;
  }
  if (closing) {
    replyError(id, 'the driver is closing');
    return;
  }
  if (cmd.op === 'close') {
    shutdown(id);
    return;
  }
  const h = typeof cmd.op === 'string' && Object.prototype.hasOwnProperty.call(handlers, cmd.op) ? handlers[cmd.op] : null;
  if (!h) {
    replyError(id, `unknown op ${JSON.stringify(cmd.op)}`);
    return;
  }
  try {
    h(cmd);
  } catch (e) {
    replyError(id, e && e.message ? e.message : e);
  }
}

// CONFORM_GRPC_JS_LOG_EVENTS=1: grpc-js's own log lines (GRPC_TRACE /
// GRPC_VERBOSITY) also become `log` events, so they land in the trace.
if (!loadError && process.env.CONFORM_GRPC_JS_LOG_EVENTS === '1') {
  const forward = (...args) => {
    const line = args.map((a) => (typeof a === 'string' ? a : require('util').inspect(a))).join(' ');
    process.stderr.write(line + '\n');
    logEvent(line);
  };
  grpc.setLogger({ error: forward, info: forward, debug: forward });
}

if (!loadError) {
  try {
    grpc.experimental.registerResolver(SCHEME, makeResolverClass());
  } catch (e) {
    loadError = `cannot register the ${SCHEME} resolver: ${e.message}`;
    diag(loadError);
  }
}

process.on('uncaughtException', (e) => {
  diag(`uncaught: ${e && e.stack ? e.stack : e}`);
  send({ ev: 'error', err: `driver: ${e && e.message ? e.message : e}` });
});
process.on('unhandledRejection', (e) => {
  diag(`unhandled rejection: ${e && e.stack ? e.stack : e}`);
  send({ ev: 'error', err: `driver: ${e && e.message ? e.message : e}` });
});
process.on('SIGTERM', () => shutdown(undefined));
process.on('SIGINT', () => shutdown(undefined));

watchStalls();
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
rl.on('line', handleLine);
rl.on('close', () => shutdown(undefined));
