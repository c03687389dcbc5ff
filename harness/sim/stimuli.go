package sim

import (
	"fmt"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/trace"
)

// AddBackend declares a backend named name serving on addrs ("ip:port"
// literals, IPv6 in brackets). Addresses no backend owns never answer.
func (w *Channel) AddBackend(name string, addrs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range addrs {
		w.backends[a] = name
	}
}

// SetFault applies f to addr (recorded as fault-set); FaultNone clears it
// (fault-clear). FaultDown also kills live connections to addr;
// FaultFailRPCs answers with UNAVAILABLE (FailRPCs chooses the code).
func (w *Channel) SetFault(addr string, f Fault) {
	w.setFault(addr, f, codes.Unavailable, f == FaultDown)
}

// SetFaultClosing applies f to addr as SetFault does and closes the live
// connections to addr: a backend taken down behind a firewall rule that
// drops or resets its SYNs (the lab's firewall acts before the listener).
func (w *Channel) SetFaultClosing(addr string, f Fault) {
	w.setFault(addr, f, codes.Unavailable, true)
}

// FailRPCs makes the backend owning addr answer every RPC on it with code
// (not OK) until the fault is cleared or replaced: fault FaultFailRPCs,
// recorded as fault-set with the code. Connections are left alone; an RPC
// picked on addr fails one RTT later with the message the lab's backend
// gives (netlab.FailMessage), and its picker's Done sees the failure.
func (w *Channel) FailRPCs(addr string, code codes.Code) {
	w.setFault(addr, FaultFailRPCs, code, false)
}

func (w *Channel) setFault(addr string, f Fault, code codes.Code, closing bool) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	e := trace.Event{Source: trace.SourceHarness, Kind: trace.KindFaultSet, Addr: addr, Fault: f.String()}
	delete(w.failCodes, addr)
	switch f {
	case FaultNone:
		delete(w.faults, addr)
		e.Kind, e.Fault = trace.KindFaultClear, ""
	case FaultFailRPCs:
		w.faults[addr], w.failCodes[addr] = f, code
		e.Code = trace.CodeName(code)
	default:
		w.faults[addr] = f
	}
	w.recordLocked(e)
	if closing {
		w.downLocked(addr)
	}
	w.mu.Unlock()
	w.settle()
}

// SetHealth sets the overall health state addr serves (the health service
// name ""): SetServiceHealth(addr, "", s).
func (w *Channel) SetHealth(addr string, s connectivity.State) {
	w.SetServiceHealth(addr, "", s)
}

// SetServiceHealth sets the health state addr serves for the health service
// name service (recorded as health-set) and, when that is the name the
// channel checks (Options.HealthService, health checking on), delivers it to
// the health listeners of subchannels connected to addr.
func (w *Channel) SetServiceHealth(addr, service string, s connectivity.State) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	before := w.healthLocked(addr)
	w.health[healthKey{addr, service}] = s
	changed := w.healthLocked(addr) != before
	w.recordLocked(trace.Event{Source: trace.SourceHarness, Kind: trace.KindHealthSet, Addr: addr, Service: service, State: s.String()})
	for _, sc := range w.subConns {
		if changed && sc.conn != nil && sc.conn.addr == addr && sc.health.listener != nil {
			sc.sendHealthLocked(w.healthLocked(addr))
		}
	}
	w.mu.Unlock()
	w.settle()
}

// Resolve pushes a resolver update to the balancer (UpdateClientConnState,
// recorded as resolver-update) and returns the balancer's answer.
func (w *Channel) Resolve(s resolver.State) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.recordLocked(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: endpointAddrs(s)})
	w.rstate = s
	cfg := w.cfg
	idle := w.idleLocked()
	w.mu.Unlock()
	if idle {
		return nil // the next balancer gets it
	}
	var err error
	w.call(func() {
		err = w.bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: s, BalancerConfig: cfg})
	})
	return err
}

// SetConfig replaces the balancer's LB config (recorded as config-update,
// Detail the JSON text). lbConfigJSON is parsed with the builder's
// ParseConfig, as New parses its config; the balancer gets it at once, with
// the last resolver update's state, as grpc-go's channel pushes a changed
// service config, and with every resolver update after. A config the
// builder refuses changes nothing and is not recorded.
func (w *Channel) SetConfig(lbConfigJSON string) error {
	return w.configure(balancer.Get(w.builder), lbConfigJSON)
}

// configure parses lbConfigJSON with b, records it as config-update, makes
// b the running policy (gracefully, when it is another) and gives it the
// config with the last resolver update's state.
func (w *Channel) configure(b balancer.Builder, lbConfigJSON string) error {
	cfg, err := parseConfig(b, lbConfigJSON)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.recordLocked(trace.Event{Source: trace.SourceHarness, Kind: trace.KindConfigUpdate, Detail: lbConfigJSON})
	w.builder, w.cfg, w.cfgText = b.Name(), cfg, lbConfigJSON
	s := w.rstate
	idle := w.idleLocked()
	w.mu.Unlock()
	if idle {
		return nil // the next balancer gets it
	}
	w.call(func() {
		w.bal.SwitchTo(b)
		err = w.bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: s, BalancerConfig: cfg})
	})
	return err
}

// SetPolicy replaces the balancer's policy and config, as a new service
// config naming another policy does (recorded as config-update, Detail the
// JSON text): the policy registered as builderName is built beside the one
// running, gets the config with the last resolver update's state, and takes
// over when it first may be picked from (L9, Swapping out balancer; package
// gracefulswitch). Naming the policy that runs is SetConfig. The new policy
// must run on the Channel's kind of time (clock.Aware or not, as the first).
func (w *Channel) SetPolicy(builderName, lbConfigJSON string) error {
	if builderName == w.bal.Name() {
		return w.SetConfig(lbConfigJSON)
	}
	b := balancer.Get(builderName)
	if b == nil {
		return fmt.Errorf("sim: no balancer registered as %q", builderName)
	}
	if _, aware := b.(clock.Aware); aware != (w.virt != nil) {
		return fmt.Errorf("sim: %s runs on another kind of time (virtual or wall) than the channel's first policy", builderName)
	}
	return w.configure(b, lbConfigJSON)
}

// ResolveConfig is a resolver update that carries an LB config, as an xDS
// resolver's state carries its service config: when lbConfigJSON differs
// from the config in force it is recorded as config-update (Detail the JSON
// text) and replaces it; then the update is recorded as resolver-update; the
// balancer gets both in one call, as grpc-go's channel delivers a resolver
// state with a new service config. A config the builder refuses changes
// nothing: the error is returned and nothing is recorded.
func (w *Channel) ResolveConfig(s resolver.State, lbConfigJSON string) error {
	w.mu.Lock()
	same := lbConfigJSON == w.cfgText
	w.mu.Unlock()
	if !same {
		cfg, err := parseConfig(balancer.Get(w.builder), lbConfigJSON)
		if err != nil {
			return err
		}
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return nil
		}
		w.recordLocked(trace.Event{Source: trace.SourceHarness, Kind: trace.KindConfigUpdate, Detail: lbConfigJSON})
		w.cfg, w.cfgText = cfg, lbConfigJSON
		w.mu.Unlock()
	}
	return w.Resolve(s)
}

// Record adds an event observed outside the channel (a control plane's
// request, for example) at the current time. Its Source must be set.
func (w *Channel) Record(e trace.Event) {
	w.stimulus(e)
}

// ResolveEndpoints resolves to one resolver.Endpoint per list of addresses.
func (w *Channel) ResolveEndpoints(endpoints ...[]string) error {
	s := resolver.State{Endpoints: make([]resolver.Endpoint, len(endpoints))}
	for i, addrs := range endpoints {
		for _, a := range addrs {
			s.Endpoints[i].Addresses = append(s.Endpoints[i].Addresses, resolver.Address{Addr: a})
		}
	}
	return w.Resolve(s)
}

// endpointAddrs lists a resolver state's addresses per endpoint; a state
// with only Addresses counts each address as an endpoint.
func endpointAddrs(s resolver.State) [][]string {
	var out [][]string
	for _, ep := range s.Endpoints {
		out = append(out, addrStrings(ep.Addresses))
	}
	if len(s.Endpoints) == 0 {
		for _, a := range s.Addresses {
			out = append(out, []string{a.Addr})
		}
	}
	return out
}

// ResolverError reports a resolver error to the balancer (recorded as
// resolver-error).
func (w *Channel) ResolverError(err error) {
	if w.stimulus(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverError, Err: err.Error()}) && !w.isIdle() {
		w.call(func() { w.bal.ResolverError(err) })
	}
}

// ExitIdle asks the balancer to leave IDLE (recorded as exit-idle), as the
// channel does when an RPC arrives while it is idle.
func (w *Channel) ExitIdle() {
	if w.stimulus(trace.Event{Source: trace.SourceHarness, Kind: trace.KindExitIdle}) && !w.isIdle() {
		w.call(func() { w.bal.ExitIdle() })
	}
}

// stimulus records e unless the Channel is closed, and reports whether it did.
func (w *Channel) stimulus(e trace.Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.recordLocked(e)
	return true
}

// Advance lets d pass. In virtual mode it runs every timer due meanwhile, in
// order, delivering what each one causes before the next; in wall mode it
// sleeps.
func (w *Channel) Advance(d time.Duration) {
	if w.virt == nil {
		time.Sleep(d)
		return
	}
	w.advanceTo(w.virt.Now().Add(d), nil)
}

// AdvanceUntil lets time pass until cond holds or max has passed, and reports
// whether cond holds. In virtual mode cond is checked after every timer; in
// wall mode after every recorded event. cond must not call into the balancer.
func (w *Channel) AdvanceUntil(cond func() bool, max time.Duration) bool {
	if w.virt == nil {
		return w.waitUntil(cond, max)
	}
	return w.advanceTo(w.virt.Now().Add(max), cond)
}

func (w *Channel) advanceTo(limit time.Time, cond func() bool) bool {
	w.ser.drain()
	for {
		if cond != nil && cond() {
			return true
		}
		if !w.virt.Step(limit) {
			break
		}
		w.ser.drain()
	}
	w.virt.AdvanceTo(limit)
	w.ser.drain()
	return cond != nil && cond()
}

func (w *Channel) waitUntil(cond func() bool, max time.Duration) bool {
	timeout := time.NewTimer(max)
	defer timeout.Stop()
	for {
		w.mu.Lock()
		changed := w.changed
		w.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-changed:
		case <-timeout.C:
			return cond()
		}
	}
}
