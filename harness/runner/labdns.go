package runner

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/netlab/dns"
)

// labDNSScheme is the scheme of an in-process client's dns target: grpc-go's
// own DNS resolver would open its sockets in conform's namespace, outside the
// lab, so an in-process channel resolves through labDNSBuilder instead.
const labDNSScheme = "dns"

// labDNSBuilder builds, for an in-process channel with a dns target, a
// resolver that does what A61 says the DNS resolver does: it looks the
// target's name up in the lab DNS (dialing inside the client namespace) and
// returns each address as an endpoint of its own (A61, "Allow Resolvers to
// Return Multiple Addresses Per Endpoint"), IPv4 first (dns.Lookup;
// scenario.DNSAnswer is the same order, the simulator's). It looks the name
// up again when the channel asks it to re-resolve, no sooner than
// labDNSMinInterval after the last lookup.
type labDNSBuilder struct {
	lab *netlab.Lab
}

func (b labDNSBuilder) Scheme() string { return labDNSScheme }

func (b labDNSBuilder) Build(t resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	host, port, err := net.SplitHostPort(t.Endpoint())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &labDNSResolver{lab: b.lab, cc: cc, host: host, port: port, ctx: ctx, cancel: cancel, now: make(chan struct{}, 1)}
	r.wg.Add(1)
	go r.loop()
	r.ResolveNow(resolver.ResolveNowOptions{})
	return r, nil
}

// labDNSResolver resolves one name on its own goroutine, once per request.
type labDNSResolver struct {
	lab        *netlab.Lab
	cc         resolver.ClientConn
	host, port string
	ctx        context.Context
	cancel     context.CancelFunc
	now        chan struct{} // a pending request to resolve
	wg         sync.WaitGroup
}

func (r *labDNSResolver) ResolveNow(resolver.ResolveNowOptions) {
	select {
	case r.now <- struct{}{}:
	default: // one is pending already
	}
}

func (r *labDNSResolver) Close() {
	r.cancel()
	r.wg.Wait()
}

// labDNSMinInterval is the least time between two lookups: requests to
// re-resolve that come sooner wait for it, as grpc-go's, grpc-js's and
// C-core's DNS resolvers make them wait (30 s each), so that a policy's
// requests reach the lab DNS as a real client's would.
const labDNSMinInterval = 30 * time.Second

func (r *labDNSResolver) loop() {
	defer r.wg.Done()
	var last time.Time
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.now:
		}
		if wait := time.Until(last.Add(labDNSMinInterval)); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		last = time.Now()
		addrs, err := dns.Lookup(r.ctx, r.lab.DialContext, r.host)
		if r.ctx.Err() != nil {
			return
		}
		if err != nil {
			r.cc.ReportError(err)
			continue
		}
		_ = r.cc.UpdateState(labDNSState(addrs, r.port))
	}
}

// labDNSState is the resolver state for the addresses a lookup returned:
// one endpoint per address, in order (and the same flat list in Addresses,
// which older policies read).
func labDNSState(addrs []netip.Addr, port string) resolver.State {
	var st resolver.State
	p, _ := strconv.Atoi(port)
	for _, a := range addrs {
		ra := resolver.Address{Addr: netip.AddrPortFrom(a, uint16(p)).String()}
		st.Addresses = append(st.Addresses, ra)
		st.Endpoints = append(st.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{ra}})
	}
	return st
}
