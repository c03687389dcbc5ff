package netlab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/vishvananda/netns"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Backend is one backend host: a namespace with an in-process grpc-go server
// listening on each of the backend's addresses.
type Backend struct {
	name   string
	index  int
	ns     netns.NsHandle
	addrs  []netip.AddrPort
	rec    *recorder
	fw     *firewall
	srv    *grpc.Server
	health *healthService

	mu        sync.Mutex // guards the fields below; never held while calling out
	down      bool
	faults    map[netip.AddrPort]Fault
	failCodes map[netip.AddrPort]codes.Code // what each FaultFailRPCs address answers with
	listeners map[netip.AddrPort]net.Listener
	conns     map[netip.AddrPort]map[net.Conn]struct{}
	serving   sync.WaitGroup // Serve loops and stalled connections
}

// Name is the backend's name.
func (b *Backend) Name() string { return b.name }

// Index is the backend's position in Config.Backends.
func (b *Backend) Index() int { return b.index }

// Addrs are the addresses the backend listens on, IPv4 first.
func (b *Backend) Addrs() []netip.AddrPort { return append([]netip.AddrPort(nil), b.addrs...) }

// newBackend makes the backend of namespace ns, listening on addrs (once
// served). Its firewall is made with the first fault that needs it.
func newBackend(bc BackendConfig, index int, ns netns.NsHandle, addrs []netip.AddrPort, rec *recorder) *Backend {
	b := &Backend{
		name: bc.Name, index: index, ns: ns, rec: rec, addrs: addrs,
		faults:    make(map[netip.AddrPort]Fault),
		failCodes: make(map[netip.AddrPort]codes.Code),
		listeners: make(map[netip.AddrPort]net.Listener),
		conns:     make(map[netip.AddrPort]map[net.Conn]struct{}),
	}
	b.srv = grpc.NewServer(
		grpc.ForceServerCodec(RawCodec{}),
		grpc.UnaryInterceptor(b.unaryInterceptor),
		grpc.StreamInterceptor(b.streamInterceptor),
	)
	b.health = newHealthService(func(k healthKey, peer netip.AddrPort, serving bool) {
		b.rec.add(Event{T: b.rec.now(), Kind: EventHealthSent, Backend: b.name, Addr: k.addr, Peer: peer, Service: k.service, Serving: serving})
	})
	healthpb.RegisterHealthServer(b.srv, b.health)
	b.srv.RegisterService(&nameService, b)
	return b
}

// serve serves lns, listeners opened inside the backend's namespace on its
// addresses, in the same order.
func (b *Backend) serve(lns []net.Listener) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, lis := range lns {
		b.serveLocked(b.addrs[i], lis)
	}
}

// listenLocked opens ap's listener inside the backend's namespace (a
// listener keeps its namespace after the thread leaves) and serves it.
func (b *Backend) listenLocked(ap netip.AddrPort) error {
	if _, ok := b.listeners[ap]; ok {
		return nil
	}
	var lis net.Listener
	err := inNS(b.ns, func() (err error) {
		lis, err = net.Listen("tcp", ap.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("netlab: backend %s: listen on %s: %w", b.name, ap, err)
	}
	b.serveLocked(ap, lis)
	return nil
}

func (b *Backend) serveLocked(ap netip.AddrPort, lis net.Listener) {
	ol := &observedListener{Listener: lis, b: b, addr: ap}
	b.listeners[ap] = ol
	b.serving.Add(1)
	go func() {
		defer b.serving.Done()
		_ = b.srv.Serve(ol) // returns when the listener is closed
	}()
}

// unlistenLocked closes ap's listener and every live connection accepted on it.
func (b *Backend) unlistenLocked(ap netip.AddrPort) {
	if lis, ok := b.listeners[ap]; ok {
		lis.Close()
		delete(b.listeners, ap)
	}
	for c := range b.conns[ap] {
		c.Close()
	}
}

func (b *Backend) track(ap netip.AddrPort, c net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns[ap] == nil {
		b.conns[ap] = make(map[net.Conn]struct{})
	}
	b.conns[ap][c] = struct{}{}
}

func (b *Backend) untrack(ap netip.AddrPort, c net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns[ap], c)
}

func (b *Backend) stalled(ap netip.AddrPort) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.faults[ap] == FaultStall
}

// has reports whether ap is one of the backend's addresses.
func (b *Backend) has(ap netip.AddrPort) bool {
	for _, a := range b.addrs {
		if a == ap {
			return true
		}
	}
	return false
}

// setFault applies f to ap (code: what FaultFailRPCs answers with); it is
// in force when setFault returns.
func (b *Backend) setFault(ap netip.AddrPort, f Fault, code codes.Code) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.faults[ap]
	delete(b.failCodes, ap)
	switch f {
	case FaultNone:
		delete(b.faults, ap)
	case FaultFailRPCs:
		b.faults[ap], b.failCodes[ap] = f, code
	default:
		b.faults[ap] = f
	}
	if isFirewalled(old) || isFirewalled(f) {
		if err := b.applyFirewallLocked(); err != nil {
			return err
		}
	}
	return b.reconcileLocked(ap)
}

// applyFirewallLocked puts the Drop and Reset faults in force, making the
// firewall first if needed.
func (b *Backend) applyFirewallLocked() error {
	if b.fw == nil {
		fw, err := newFirewall(int(b.ns))
		if err != nil {
			return err
		}
		b.fw = fw
	}
	return b.fw.apply(b.faults)
}

func isFirewalled(f Fault) bool { return f == FaultDrop || f == FaultReset }

// reconcileLocked makes ap listen exactly when the backend is up and ap is
// not faulted down.
func (b *Backend) reconcileLocked(ap netip.AddrPort) error {
	if b.down || b.faults[ap] == FaultDown {
		b.unlistenLocked(ap)
		return nil
	}
	return b.listenLocked(ap)
}

// setDown takes the whole backend down (true) or brings it back up.
func (b *Backend) setDown(down bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
	for _, ap := range b.addrs {
		if err := b.reconcileLocked(ap); err != nil {
			return err
		}
	}
	return nil
}

// SetServing sets the backend's overall health (the health service name
// "") on every one of its addresses: SERVING when true, NOT_SERVING when
// false. Lab.SetHealth sets one address's status for one service name, and
// records it.
func (b *Backend) SetServing(serving bool) {
	for _, ap := range b.addrs {
		b.health.set(ap, "", serving)
	}
}

// close stops the server and waits for everything it started.
func (b *Backend) close() {
	b.srv.Stop() // closes listeners and connections
	b.mu.Lock()
	for ap := range b.listeners {
		b.unlistenLocked(ap)
	}
	for ap := range b.conns {
		for c := range b.conns[ap] {
			c.Close()
		}
	}
	b.mu.Unlock()
	b.serving.Wait()
	if b.fw != nil {
		b.fw.close()
	}
}

func (b *Backend) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(BackendHeader, b.name))
	if err := b.serveRPC(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (b *Backend) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	_ = ss.SetHeader(metadata.Pairs(BackendHeader, b.name))
	if err := b.serveRPC(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}

// serveRPC records an RPC as rpc-served and returns the status it is to
// fail with under FaultFailRPCs on the address it came in on, or nil when
// the handler is to serve it.
func (b *Backend) serveRPC(ctx context.Context, method string) error {
	e := Event{T: b.rec.now(), Kind: EventRPC, Backend: b.name, Method: method}
	if p, ok := peer.FromContext(ctx); ok {
		e.Peer = addrPortOf(p.Addr)
		e.Addr = addrPortOf(p.LocalAddr)
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(RPCHeader); len(v) > 0 {
			e.RPC = v[0]
		}
	}
	var err error
	if code, ok := b.failCode(e.Addr, method); ok {
		e.Code = code
		err = status.Error(code, FailMessage(e.Addr.String()))
	}
	b.rec.add(e)
	return err
}

// failCode is the code RPCs of method on ap fail with, when ap has
// FaultFailRPCs: every RPC but the health service's, which keeps answering
// what SetServing set (a health check is not an RPC the client's policy
// counts).
func (b *Backend) failCode(ap netip.AddrPort, method string) (codes.Code, bool) {
	if strings.HasPrefix(method, "/"+healthpb.Health_ServiceDesc.ServiceName+"/") {
		return codes.OK, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.faults[ap] != FaultFailRPCs {
		return codes.OK, false
	}
	return b.failCodes[ap], true
}

// FailMessage is the status message of an RPC a FaultFailRPCs address
// (addr, "ip:port") fails. The simulator answers with the same message
// (harness/sim), so a client's results read alike in both.
func FailMessage(addr string) string { return "fault fail_rpcs on " + addr }

func addrPortOf(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// nameService is the raw-bytes service: Name returns the backend's name.
var nameService = grpc.ServiceDesc{
	ServiceName: "conform.lab.Backend",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Name",
		Handler:    nameHandler,
	}},
	Metadata: "conform/lab/backend",
}

func nameHandler(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
	var in []byte
	if err := dec(&in); err != nil {
		return nil, err
	}
	b := srv.(*Backend)
	h := func(context.Context, any) (any, error) { return []byte(b.name), nil }
	if ic == nil {
		return h(ctx, in)
	}
	return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: NameMethod}, h)
}
