#!/usr/bin/python3
"""conform driver for C-core through Debian's python3-grpcio.

Speaks the conform driver protocol, version 1 (harness/driver/PROTOCOL.md):
JSON commands on stdin, one per line; replies and events on stdout, one per
line; diagnostics on stderr. Run it with the system interpreter,
/usr/bin/python3, which is the one python3-grpcio installs into.

What grpcio can express, and how:
- grpcio has no custom-resolver API, so `conform:///` targets (addresses
  pushed by `resolve`) cannot be expressed: `create` with one, and every
  `resolve`, is an `error` reply saying so. hello says "endpoints": false.
- Static lists go through C-core's own schemes: `ipv4:a:p,b:p` and
  `ipv6:[a]:p,[b]:p` (one family per list).
- Mixed families, and addresses that change over time, go through DNS: a
  `dns:` target served by the lab DNS (netlab/dns), with the DNS server as
  the authority, e.g. `dns://198.18.255.53:53/svc.conform:50051`. C-core
  accepts an authority only in its c-ares resolver, with the port spelled
  out; this driver selects that resolver (GRPC_DNS_RESOLVER=ares) unless the
  environment chose one.
- Channel states come from channel.subscribe: grpcio samples the state after
  each C-core watch notification, so a state that lasts less than a sample
  can be missed: hello says "observes": "polling".
"""

import json
import logging
import os
import re
import sys
import threading

PROTOCOL = 1
INSTALL_HINT = "apt-get update && apt-get install -y python3-grpcio (then run the driver with /usr/bin/python3)"
BACKEND_HEADER = "x-conform-backend"
CLOSE_WAIT_S = 2.0  # how long close waits for cancelled RPCs to report

# The authority form of dns: targets needs C-core's c-ares resolver.
os.environ.setdefault("GRPC_DNS_RESOLVER", "ares")

# Protocol lines go to a private copy of stdout; file descriptor 1 then
# points at stderr, so nothing else (C-core, Python, a stray print) can ever
# write to the protocol stream.
_out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="driver.py: %(levelname)s %(message)s")
log = logging.getLogger("conform.driver")

try:
    import grpc
    _IMPORT_ERROR = None
except Exception as exc:  # pylint: disable=broad-except
    grpc = None
    _IMPORT_ERROR = "python3-grpcio is not available to %s (%s): install it with: %s" % (
        sys.executable, exc, INSTALL_HINT)

_out_lock = threading.Lock()


def emit(obj):
    """Writes one protocol line; safe from any thread."""
    line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    with _out_lock:
        try:
            _out.write(line + "\n")
            _out.flush()
        except (BrokenPipeError, ValueError):  # conform went away, or we are closing
            pass


class CommandError(Exception):
    """A command that cannot be carried out: an `error` reply."""


class Driver:
    """One channel and its RPCs."""

    def __init__(self):
        self.channel = None
        self.target = None
        self.pending = 0  # RPCs started whose result is not written yet
        self.cond = threading.Condition()

    # --- commands ---------------------------------------------------------

    def hello(self, _cmd):
        need_grpc()
        return {"hello": {
            "protocol": PROTOCOL,
            "impl": "grpcio",
            "version": grpc.__version__,
            "can": {
                "endpoints": False,       # no custom resolver: no multi-address endpoints
                "mixed_families": True,   # only through a dns: target (the lab DNS)
                "service_config": True,   # grpc.service_config channel argument
                "shuffle": False,         # no shuffleAddressList in this C-core
                "wait_for_ready": True,
                "xds": has_xds(),         # C-core's own xDS client, bootstrap from the environment
                "xds_pick_first": False,  # 1.51 reads only the lb_policy enum (A62's PickFirst came later)
                "resolver": False,        # no custom-resolver API: updates come through the lab DNS
                # Client-side health checking (gRFC A17) is C-core's own: the
                # service config's healthCheckConfig starts a health watch on
                # each subchannel (pick_first inhibits it).
                "health_check": True,
                # create's idle_timeout_ms: C-core's client idle filter takes
                # the channel argument grpc.client_idle_timeout_ms.
                "idle_timeout": True,
            },
            "observes": "polling",
        }}

    def create(self, cmd):
        need_grpc()
        if self.channel is not None:
            raise CommandError("a channel exists already (one per driver)")
        target = field(cmd, "target", str)
        if not target:
            raise CommandError("create: empty target")
        if target.startswith("conform:"):
            raise CommandError(
                "grpcio has no custom resolver API, so a conform:/// target cannot be expressed; "
                "use a dns: target served by the lab DNS (netlab/dns), or an ipv4:/ipv6: list")
        check_dns_authority(target)
        service_config = field(cmd, "service_config", str, default="")
        options = []
        if not target.startswith("xds:"):
            # The scenario's service config only: no TXT lookups for one.
            # (An xds: target's LB config is the service config its resolver
            # builds from the xDS resources, so it must be taken.)
            options.append(("grpc.service_config_disable_resolution", 1))
        if service_config:
            try:
                parsed = json.loads(service_config)
            except ValueError as exc:
                raise CommandError("create: service_config is not JSON: %s" % exc) from None
            if not isinstance(parsed, dict):
                raise CommandError("create: service_config is not a JSON object")
            options.append(("grpc.service_config", service_config))
        idle_ms = field(cmd, "idle_timeout_ms", int, default=0)
        if idle_ms < 0:
            raise CommandError("create: idle_timeout_ms must not be negative")
        if idle_ms:
            options.append(("grpc.client_idle_timeout_ms", idle_ms))
        self.channel = grpc.insecure_channel(target, options=options)
        self.target = target
        # try_to_connect: the channel leaves IDLE at once (the protocol's
        # "starts connecting at once"). The first callback is the state right
        # after create.
        self.channel.subscribe(self.on_state, try_to_connect=True)
        log.info("channel created: target=%s service_config=%s", target, service_config or "(none)")
        return {}

    def resolve(self, _cmd):
        need_grpc()
        raise CommandError(
            "grpcio has no custom resolver API: resolver updates cannot be pushed; "
            "scenarios reach this driver through the lab DNS (dns: targets) instead")

    def rpc(self, cmd):
        need_grpc()
        if self.channel is None:
            raise CommandError("rpc: no channel (create first)")
        rpc_id = field(cmd, "rpc", str)
        if not rpc_id:
            raise CommandError("rpc: empty rpc id")
        method = field(cmd, "method", str)
        if not method.startswith("/"):
            raise CommandError("rpc: method %r must be /service/method" % method)
        wait_for_ready = field(cmd, "wait_for_ready", bool, default=False)
        deadline_ms = field(cmd, "deadline_ms", (int, float), default=0)
        if deadline_ms < 0:
            raise CommandError("rpc: deadline_ms must be a number >= 0")
        md = field(cmd, "metadata", dict, default={})
        metadata = []
        for key, value in md.items():
            if not isinstance(value, str):
                raise CommandError("rpc: metadata %r: value must be a string" % key)
            if key.endswith("-bin"):
                metadata.append((key.lower(), value.encode("utf-8")))
            else:
                metadata.append((key.lower(), value))
        timeout = deadline_ms / 1000.0 if deadline_ms > 0 else None
        # No serializers: request and response are raw bytes, as the lab
        # backends' /conform.lab.Backend/Name wants.
        call = self.channel.unary_unary(method)
        try:
            future = call.future(b"", timeout=timeout, metadata=metadata or None, wait_for_ready=wait_for_ready)
        except Exception as exc:  # pylint: disable=broad-except
            raise CommandError("rpc: starting the call: %s" % exc) from None
        with self.cond:
            self.pending += 1
        # The ok reply goes out before the callback is added: a call that is
        # already over runs its callback right here, and its result must
        # follow the reply.
        return {}, lambda: future.add_done_callback(lambda f: self.on_done(rpc_id, f))

    def close(self, _cmd=None):
        if self.channel is not None:
            channel, self.channel = self.channel, None
            channel.unsubscribe(self.on_state)
            channel.close()  # cancels calls in flight: they report CANCELLED
            with self.cond:
                self.cond.wait_for(lambda: self.pending == 0, timeout=CLOSE_WAIT_S)
                if self.pending:
                    log.warning("%d RPCs did not report within %.1fs of close", self.pending, CLOSE_WAIT_S)
        return {}

    # --- callbacks (grpcio's threads) -------------------------------------

    def on_state(self, state):
        emit({"ev": "channel-state", "state": state.name})

    def on_done(self, rpc_id, future):
        try:
            code = future.code()
            ev = {"ev": "rpc-result", "rpc": rpc_id, "code": code.name}
            if code == grpc.StatusCode.OK:
                backend = None
                for key, value in future.initial_metadata() or ():
                    if key == BACKEND_HEADER:
                        backend = value if isinstance(value, str) else value.decode("utf-8", "replace")
                if backend is not None:
                    ev["backend"] = backend
                body = future.result()
                if backend is None or body != backend.encode("utf-8"):
                    emit({"ev": "log", "line": "rpc %s: body %r, header %s=%r" % (rpc_id, body, BACKEND_HEADER, backend)})
            else:
                ev["err"] = future.details() or ""
            emit(ev)
        except Exception as exc:  # pylint: disable=broad-except
            emit({"ev": "error", "err": "rpc %s: reading the result: %s" % (rpc_id, exc)})
        finally:
            with self.cond:
                self.pending -= 1
                self.cond.notify_all()


# What C-core's c-ares resolver accepts as a dns: authority: an IP literal
# with its port ("cannot parse authority" otherwise, found only at the first
# RPC).
_AUTHORITY = re.compile(r"^(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]):\d{1,5}$")


# XDS_SINCE is the oldest grpcio conform has run over xDS (Debian's 1.51.1):
# its C-core reads the bootstrap conform gives (GRPC_XDS_BOOTSTRAP_CONFIG,
# server_features xds_v3). Older ones are not claimed.
XDS_SINCE = (1, 51)


def has_xds():
    """Whether this grpcio's C-core has an xDS client conform can drive."""
    try:
        major, minor = (int(x) for x in grpc.__version__.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= XDS_SINCE


def check_dns_authority(target):
    """Refuses, at create, dns: targets C-core would turn into a broken channel."""
    if not target.startswith("dns://"):
        return
    authority = target[len("dns://"):].split("/", 1)[0]
    if not authority:
        return
    resolver = os.environ.get("GRPC_DNS_RESOLVER", "").lower()
    if resolver not in ("", "ares"):
        raise CommandError("create: %s: C-core's %s resolver takes no DNS server authority "
                           "(GRPC_DNS_RESOLVER=ares does)" % (target, resolver))
    if not _AUTHORITY.match(authority):
        raise CommandError("create: %s: C-core's c-ares resolver wants the authority as an IP literal "
                           "with its port, e.g. dns://198.18.255.53:53/name:port" % target)


def need_grpc():
    if grpc is None:
        raise CommandError(_IMPORT_ERROR)


_MISSING = object()


def field(cmd, name, kinds, default=_MISSING):
    """Returns cmd[name], checked against kinds; default when absent or null."""
    value = cmd.get(name)
    if value is None:
        if default is _MISSING:
            raise CommandError("%s: missing field %r" % (cmd.get("op"), name))
        return default
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise CommandError("%s: field %r has the wrong type (%s)" % (cmd.get("op"), name, type(value).__name__))
    return value


OPS = {"hello": Driver.hello, "create": Driver.create, "resolve": Driver.resolve, "rpc": Driver.rpc, "close": Driver.close}


def main():
    driver = Driver()
    if _IMPORT_ERROR:
        log.error("%s", _IMPORT_ERROR)
    stdin = sys.stdin.buffer
    while True:
        try:
            raw = stdin.readline()
        except KeyboardInterrupt:
            break
        if not raw:
            break  # EOF: close and exit 0
        if not raw.strip():
            continue
        try:
            cmd = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            emit({"ev": "error", "err": "malformed command line (%s): %r" % (exc, raw[:200])})
            continue
        if not isinstance(cmd, dict):
            emit({"ev": "error", "err": "a command is a JSON object, not %s" % type(cmd).__name__})
            continue
        has_id = "id" in cmd
        reply = {"id": cmd["id"]} if has_id else {}
        op = cmd.get("op")
        handler = OPS.get(op) if isinstance(op, str) else None
        after = None
        try:
            if not has_id:
                raise CommandError("command without an id")
            if handler is None:
                raise CommandError("unknown op %r" % (op,))
            result = handler(driver, cmd)
            if isinstance(result, tuple):
                result, after = result
            reply["ev"] = "ok"
            reply.update(result)
        except CommandError as exc:
            reply["ev"], reply["err"] = "error", str(exc)
        except Exception as exc:  # pylint: disable=broad-except
            log.exception("%s failed", op)
            reply["ev"], reply["err"] = "error", "%s: %s: %s" % (op, type(exc).__name__, exc)
        emit(reply)
        if after is not None:
            after()
        if op == "close" and reply["ev"] == "ok":
            break
    try:
        driver.close()
    except Exception:  # pylint: disable=broad-except
        log.exception("closing the channel")
    with _out_lock:
        try:
            _out.flush()
        except (BrokenPipeError, ValueError):
            pass
    sys.stderr.flush()
    # grpcio's threads are daemons, but C-core's shutdown at interpreter exit
    # can block on them; everything is written, so leave now.
    os._exit(0)


if __name__ == "__main__":
    main()
