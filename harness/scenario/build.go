package scenario

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Builder writes a scenario in Go, for suites:
//
//	s := scenario.New("he-dropped-ipv6").
//		Backend("b1", scenario.Dual).
//		LB("conform_pick_first", `{}`).
//		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
//		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
//		At(100*time.Millisecond, scenario.RPC("r1")).
//		End(30 * time.Second).
//		MustBuild()
type Builder struct {
	s Scenario
}

// New starts a scenario named name.
func New(name string) *Builder {
	return &Builder{s: Scenario{Name: name}}
}

// Describe sets the scenario's description.
func (b *Builder) Describe(text string) *Builder {
	b.s.Description = text
	return b
}

// Backend adds a backend listening on the families of stack.
func (b *Builder) Backend(name string, stack Stack) *Builder {
	b.s.Backends = append(b.s.Backends, Backend{Name: name, Stack: stack})
	return b
}

// Target sets the target form (TargetManual, TargetDNS).
func (b *Builder) Target(form string) *Builder {
	b.s.Client.Target = form
	return b
}

// IdleTimeout sets the channel's idle timeout (A62).
func (b *Builder) IdleTimeout(d time.Duration) *Builder {
	b.s.Client.IdleTimeout = d
	return b
}

// LB selects the load-balancing policy and its JSON config.
func (b *Builder) LB(policy, config string) *Builder {
	b.s.Client.LBPolicy, b.s.Client.LBConfig = policy, config
	return b
}

// ServiceConfig gives the client a whole service config (JSON).
func (b *Builder) ServiceConfig(json string) *Builder {
	b.s.Client.ServiceConfig = json
	return b
}

// At applies a at time d since the start.
func (b *Builder) At(d time.Duration, a Action) *Builder {
	b.s.Steps = append(b.s.Steps, Step{At: d, Action: a})
	return b
}

// After applies a once c is met.
func (b *Builder) After(c Cond, a Action) *Builder {
	return b.AfterDelay(c, 0, a)
}

// AfterDelay applies a delay d after c is met.
func (b *Builder) AfterDelay(c Cond, d time.Duration, a Action) *Builder {
	b.s.Steps = append(b.s.Steps, Step{After: &c, Delay: d, Action: a})
	return b
}

// FinishAfterEveryRPC ends the run once every RPC started by the steps so
// far has its result, in whatever order the results come: a run that ended
// on the last RPC's result alone would cancel an earlier one still in
// flight on a loaded machine (its result CANCELLED, not the client's).
func (b *Builder) FinishAfterEveryRPC() *Builder {
	n := 0
	for _, st := range b.s.Steps {
		if _, ok := st.Action.(StartRPC); ok {
			n++
		}
	}
	return b.After(On("rpc-result").Times(n), Finish())
}

// End sets when the run stops.
func (b *Builder) End(d time.Duration) *Builder {
	b.s.End = d
	return b
}

// Build validates the scenario and returns it.
func (b *Builder) Build() (*Scenario, error) {
	s := b.s
	s.Backends = slices.Clone(s.Backends)
	s.Steps = slices.Clone(s.Steps)
	s.Client.Env = maps.Clone(s.Client.Env)
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %q: %w", s.Name, err)
	}
	return &s, nil
}

// MustBuild is Build for scenarios fixed in code; it panics on an invalid one.
func (b *Builder) MustBuild() *Scenario {
	s, err := b.Build()
	if err != nil {
		panic(err)
	}
	return s
}

// Resolve is a resolver update with the given endpoints.
func Resolve(eps ...Endpoint) ResolverUpdate {
	return ResolverUpdate{Endpoints: eps}
}

// EP is an endpoint with the given addresses, in order.
func EP(addrs ...Addr) Endpoint {
	return Endpoint{Addrs: addrs}
}

// With returns a copy of ep with attribute key set to value.
func (ep Endpoint) With(key, value string) Endpoint {
	attrs := make(map[string]string, len(ep.Attrs)+1)
	for k, v := range ep.Attrs {
		attrs[k] = v
	}
	attrs[key] = value
	ep.Attrs = attrs
	return ep
}

// ResolveError makes the resolver report an error with message msg.
func ResolveError(msg string) ResolverError {
	return ResolverError{Err: msg}
}

// Config replaces the client's policy and its JSON config during the run
// (a SetConfig step).
func Config(policy, config string) SetConfig {
	return SetConfig{LBPolicy: policy, LBConfig: config}
}

// ConfigService replaces the client's service config (JSON) during the run.
func ConfigService(json string) SetConfig {
	return SetConfig{ServiceConfig: json}
}

// Health sets the health status (Serving, NotServing) served on address a.
func Health(a Addr, status string) SetHealth {
	return SetHealth{Addr: a, Status: status}
}

// Fault sets fault f on address a.
func Fault(a Addr, f FaultType) SetFault {
	return SetFault{Addr: a, Fault: f}
}

// FailWith makes the backend answer every RPC on address a with the status
// code named code until the fault is cleared: fault FailRPCs with a code
// (Codes; "" is DefaultFailCode). Fault(a, FailRPCs) is FailWith(a, "").
func FailWith(a Addr, code string) SetFault {
	return SetFault{Addr: a, Fault: FailRPCs, Code: code}
}

// Clear removes the fault on address a.
func Clear(a Addr) ClearFault {
	return ClearFault{Addr: a}
}

// Stop stops the backend named name.
func Stop(name string) BackendDown {
	return BackendDown{Backend: name}
}

// Start starts the stopped backend named name again.
func Start(name string) BackendUp {
	return BackendUp{Backend: name}
}

// RPCOption sets an attribute of an RPC.
type RPCOption func(*StartRPC)

// RPC sends an RPC with the given id.
func RPC(id string, opts ...RPCOption) StartRPC {
	r := StartRPC{ID: id}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// Deadline gives the RPC a deadline d after it is sent.
func Deadline(d time.Duration) RPCOption {
	return func(r *StartRPC) { r.Deadline = d }
}

// WaitForReady sets the RPC's wait-for-ready flag.
func WaitForReady() RPCOption {
	return func(r *StartRPC) { r.WaitForReady = true }
}

// Metadata adds a metadata entry to the RPC.
func Metadata(key, value string) RPCOption {
	return func(r *StartRPC) {
		if r.Metadata == nil {
			r.Metadata = map[string]string{}
		}
		r.Metadata[key] = value
	}
}

// Wait requires c to be met within timeout.
func Wait(c Cond, timeout time.Duration) WaitFor {
	return WaitFor{Cond: c, Timeout: timeout}
}

// Finish ends the run.
func Finish() EndRun {
	return EndRun{}
}

// On is a condition on events of the given trace kind ("subchannel-state").
func On(kind string) Cond {
	return Cond{Kind: kind}
}

// WithState narrows c to events with connectivity state st.
func (c Cond) WithState(st string) Cond { c.State = st; return c }

// WithAddr narrows c to events on address a.
func (c Cond) WithAddr(a Addr) Cond { c.Addr = a; return c }

// WithBackend narrows c to events of this backend, on any of its
// addresses.
func (c Cond) WithBackend(name string) Cond { c.Backend = name; return c }

// WithRPC narrows c to events of the RPC with this id.
func (c Cond) WithRPC(id string) Cond { c.RPC = id; return c }

// WithCode narrows c to events with this status code name.
func (c Cond) WithCode(code string) Cond { c.Code = code; return c }

// WithTimer narrows c to events of the timer with this purpose.
func (c Cond) WithTimer(purpose string) Cond { c.Timer = purpose; return c }

// WithPolicy narrows c to events of this policy path.
func (c Cond) WithPolicy(path string) Cond { c.Policy = path; return c }

// WithXDS narrows an xds-request condition to requests of this kind
// ("request", "ACK", "NACK"; "" any) for this resource type ("LDS", "RDS",
// "CDS", "EDS" or a type URL; "" any).
func (c Cond) WithXDS(kind, typ string) Cond { c.XDS, c.Type = kind, typ; return c }

// Times makes c wait for the n-th matching event.
func (c Cond) Times(n int) Cond { c.Count = n; return c }
