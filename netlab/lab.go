package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/conformlab/conform/netlab/capture"

	"github.com/vishvananda/netns"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
)

// Lab is a running lab. Its methods are safe for concurrent use.
type Lab struct {
	cfg      Config
	rec      *recorder
	switchNS netns.NsHandle
	clients  []*host
	backends []*Backend
	byName   map[string]*Backend
	byAddr   map[netip.AddrPort]*Backend

	capture *capture.Capture // nil unless Config.Capture
	stalls  *stallWatch      // nil unless Config.WatchStalls

	closeOnce sync.Once
	closeErr  error
	procs     processes
}

// plugParallelism bounds how many hosts are created at once.
const plugParallelism = 8

// Start validates cfg and builds the lab: the switch, the clients, every
// backend with its server listening. On error nothing is left behind.
func Start(ctx context.Context, cfg Config) (_ *Lab, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	l := &Lab{cfg: cfg, rec: newRecorder(cfg.OnEvent), switchNS: netns.None(),
		byName: make(map[string]*Backend), byAddr: make(map[netip.AddrPort]*Backend)}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	sw, err := newSwitch()
	l.switchNS = sw.ns
	defer sw.close()
	if err != nil {
		return nil, err
	}
	if err := l.plugAll(ctx, sw); err != nil {
		return nil, err
	}
	if cfg.Capture {
		if err := l.startCapture(); err != nil {
			return nil, err
		}
	}
	if cfg.WatchStalls {
		l.stalls = watchStalls(l.rec.now, StallStep, recordStalls(l.rec))
	}
	return l, nil
}

// startCapture records, in client 0's namespace, every SYN and its answer.
func (l *Lab) startCapture() error {
	c, err := capture.Open(l.clients[0].ns, "eth0", capture.OnPacket(l.recordPacket))
	if err != nil {
		return fmt.Errorf("netlab: capture: %w", err)
	}
	l.capture = c
	return nil
}

var packetEvents = map[capture.Kind]EventKind{capture.SYN: EventSYN, capture.SYNACK: EventSYNACK, capture.RST: EventRST}

func (l *Lab) recordPacket(p capture.Packet) {
	if p.Kind == capture.RST && !p.Refusal {
		return // an abort of an established connection, not an attempt's fate (EventRST)
	}
	e := Event{T: l.rec.fromKernel(p.Kernel), Kind: packetEvents[p.Kind], Addr: p.Dst, Peer: p.Src, Retransmit: p.Retransmit}
	if _, fromBackend := l.byAddr[p.Src]; fromBackend { // SYN-ACKs, and RSTs but a client's own
		e.Addr, e.Peer = p.Src, p.Dst
	}
	if b := l.byAddr[e.Addr]; b != nil {
		e.Backend = b.name
	}
	l.rec.add(e)
}

// Attempts returns every connection attempt client 0 made, with its outcome
// (established, reset, unanswered, or still pending). Nil without Capture.
func (l *Lab) Attempts() []capture.Attempt {
	if l.capture == nil {
		return nil
	}
	return l.capture.Attempts()
}

// plugAll creates every client and backend host, several at a time, waits
// until their links are up, and starts the backends' servers.
func (l *Lab) plugAll(ctx context.Context, sw *switchNS) error {
	clients, backends := l.hosts()
	defer closeHandles(clients)
	defer closeHandles(backends)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(plugParallelism)
	for _, hst := range clients {
		g.Go(func() error { return plug(gctx, sw, hst, backends) })
	}
	for i, hst := range backends {
		g.Go(func() error {
			err := plug(gctx, sw, hst, clients)
			if hst.ns.IsOpen() { // even on error: its namespace needs closing
				hst.backend = newBackend(l.cfg.Backends[i], i, hst.ns, hst.listen, l.rec)
				hst.backend.serve(hst.lns)
			}
			return err
		})
	}
	err := g.Wait()
	if err == nil {
		err = waitLinksUp(ctx, sw.h, append(clients, backends...))
	}
	l.clients = clients
	for _, hst := range backends {
		if hst.backend != nil {
			l.addBackend(hst.backend)
		}
	}
	return err
}

// hosts derives every client and backend host from the config: names,
// ports, MACs and addresses.
func (l *Lab) hosts() (clients, backends []*host) {
	for c := range l.cfg.Clients {
		clients = append(clients, &host{name: fmt.Sprintf("client%d", c), port: fmt.Sprintf("c%d", c), ns: netns.None(), mac: hostMAC(false, c),
			v4: ClientAddr(c, IPv4), v6: ClientAddr(c, IPv6)})
	}
	for i, bc := range l.cfg.Backends {
		hst := &host{name: bc.Name, port: fmt.Sprintf("b%d", i), ns: netns.None(), mac: hostMAC(true, i)}
		if bc.Families.HasIPv4() {
			hst.v4 = BackendAddr(i, IPv4)
			hst.listen = append(hst.listen, netip.AddrPortFrom(hst.v4, uint16(l.cfg.Port)))
		}
		if bc.Families.HasIPv6() {
			hst.v6 = BackendAddr(i, IPv6)
			hst.listen = append(hst.listen, netip.AddrPortFrom(hst.v6, uint16(l.cfg.Port)))
		}
		backends = append(backends, hst)
	}
	return clients, backends
}

// addBackend adds b to the lab's backends, in index order.
func (l *Lab) addBackend(b *Backend) {
	l.backends = append(l.backends, b)
	l.byName[b.name] = b
	for _, ap := range b.addrs {
		l.byAddr[ap] = b
	}
}

// closeHandles closes the hosts' netlink handles once the lab is built.
func closeHandles(hosts []*host) {
	for _, hst := range hosts {
		if hst.h != nil {
			hst.h.Close()
			hst.h = nil
		}
	}
}

// Close removes everything the lab created: processes, servers, capture,
// namespaces (and with them every veth and rule). It is idempotent.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		if l.stalls != nil {
			l.stalls.Close()
		}
		l.procs.killAll()
		if l.capture != nil {
			l.closeErr = l.capture.Close()
		}
		for _, b := range l.backends {
			b.close()
			b.ns.Close()
		}
		for _, c := range l.clients {
			if c.ns.IsOpen() {
				c.ns.Close()
			}
		}
		if l.switchNS.IsOpen() {
			l.switchNS.Close()
		}
	})
	return l.closeErr
}

// Backend returns the backend with that name, or nil.
func (l *Lab) Backend(name string) *Backend { return l.byName[name] }

// Backends returns every backend in index order.
func (l *Lab) Backends() []*Backend { return append([]*Backend(nil), l.backends...) }

// Port is the port every backend listens on.
func (l *Lab) Port() int { return l.cfg.Port }

// Addr returns backend name's address of family fam.
func (l *Lab) Addr(name string, fam Family) (netip.AddrPort, error) {
	b := l.byName[name]
	if b == nil {
		return netip.AddrPort{}, fmt.Errorf("netlab: no backend %q", name)
	}
	for _, ap := range b.addrs {
		if FamilyOf(ap.Addr()) == fam {
			return ap, nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("netlab: backend %q has no %s address", name, fam)
}

// SetFault applies f (FaultNone clears) to one backend address. The fault is
// in force when SetFault returns. FaultFailRPCs answers with UNAVAILABLE
// (FailRPCs chooses the code).
func (l *Lab) SetFault(ap netip.AddrPort, f Fault) error {
	if f < FaultNone || f > FaultFailRPCs {
		return fmt.Errorf("netlab: unknown fault %d", int(f))
	}
	return l.setFault(ap, f, codes.Unavailable)
}

// FailRPCs makes the backend answer every RPC on ap, its health service's
// aside, with status code (not OK) until the fault is cleared (SetFault
// with FaultNone) or replaced: fault FaultFailRPCs. Connections are
// accepted and kept; the backend records each RPC it fails as rpc-served
// with the code. The fault is in force when FailRPCs returns.
func (l *Lab) FailRPCs(ap netip.AddrPort, code codes.Code) error {
	if code == codes.OK || code > codes.Unauthenticated {
		return fmt.Errorf("netlab: fail_rpcs with status %v: want a failure code", code)
	}
	return l.setFault(ap, FaultFailRPCs, code)
}

// setFault applies f to ap (code: what FaultFailRPCs answers with) and
// records fault-set or fault-clear.
func (l *Lab) setFault(ap netip.AddrPort, f Fault, code codes.Code) error {
	b := l.byAddr[ap]
	if b == nil {
		return fmt.Errorf("netlab: %s is not a backend address of this lab", ap)
	}
	if err := b.setFault(ap, f, code); err != nil {
		return err
	}
	e := Event{T: l.rec.now(), Kind: EventFaultSet, Backend: b.name, Addr: ap, Fault: f}
	switch f {
	case FaultNone:
		e.Kind = EventFaultClear
	case FaultFailRPCs:
		e.Code = code
	}
	l.rec.add(e)
	return nil
}

// SetHealth sets the status the health service of ap's backend serves on
// ap for the health service name service ("" the overall health): SERVING
// when serving, NOT_SERVING otherwise. Clients watching it (A17's Watch) are
// sent the new status at once. The health-set event recorded is stamped
// when the status changed, before any client could hear of it. Every
// (address, service name) serves SERVING until set.
func (l *Lab) SetHealth(ap netip.AddrPort, service string, serving bool) error {
	b := l.byAddr[ap]
	if b == nil {
		return fmt.Errorf("netlab: %s is not a backend address of this lab", ap)
	}
	e := Event{T: l.rec.now(), Kind: EventHealthSet, Backend: b.name, Addr: ap, Service: service, Serving: serving}
	b.health.set(ap, service, serving)
	l.rec.add(e)
	return nil
}

// SetBackendDown takes a backend down (no listener, live connections closed)
// or brings it back up. Per-address faults are kept. backend-down carries
// the time the backend began going down: its clients see their connections
// closed while it stops, and a reaction timed from it must not come first.
// backend-up carries the time it was listening again.
func (l *Lab) SetBackendDown(name string, down bool) error {
	b := l.byName[name]
	if b == nil {
		return fmt.Errorf("netlab: no backend %q", name)
	}
	began := l.rec.now()
	if err := b.setDown(down); err != nil {
		return err
	}
	e := Event{T: l.rec.now(), Kind: EventBackendUp, Backend: name}
	if down {
		e.T, e.Kind = began, EventBackendDown
	}
	l.rec.add(e)
	return nil
}

// Events returns everything observed so far, in time order.
func (l *Lab) Events() []Event { return l.rec.snapshot() }

// Now is the time since the lab started, on the events' timebase.
func (l *Lab) Now() Duration { return l.rec.now() }
