package lbtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/hierarchy"
	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"
)

// Test doubles for parent policies (priority, weighted_target).
//
// Scripted is a seam-aware child policy whose state the test sets: it
// reports exactly what it is told (plus, optionally, a state on every
// config update), and its picker fails every pick with a status naming the
// child, so an RPC's result says whose picker is in use.
//
// A root (RegisterRoot) is a seam-aware parent that passes the channel's
// ClientConn straight to the policy under test and takes that policy's
// config from the resolver state's attributes (CfgKey), so that a test can
// push config updates (the simulator parses its LB config once, in sim.New).

// ScriptedName is the name Scripted is registered under; ScriptedAltName
// registers it again under another name, a different policy for a parent
// whose child's policy changes.
const (
	ScriptedName    = "conform_test_scripted"
	ScriptedAltName = "conform_test_scripted_alt"
)

func init() {
	balancer.Register(scriptedBuilder{ScriptedName})
	balancer.Register(scriptedBuilder{ScriptedAltName})
}

// Kids is the live Scripted child of each id; Builds counts builds per id.
// NewChannel resets both. Tests are not parallel: one channel at a time, all on
// the test goroutine.
var (
	Kids   map[string]*Scripted
	Builds map[string]int
)

// ScriptedConfig is Scripted's config.
type ScriptedConfig struct {
	serviceconfig.LoadBalancingConfig
	ID       string `json:"id"`
	OnUpdate string `json:"onUpdate"` // a state to report on every update
}

type scriptedBuilder struct{ name string }

func (b scriptedBuilder) Name() string { return b.name }
func (scriptedBuilder) OnClockSeam()   {}
func (scriptedBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &ScriptedConfig{}
	return c, json.Unmarshal(js, c)
}
func (scriptedBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &Scripted{CC: cc}
}

// Scripted is one scripted child: what its parent gave it and did to it.
type Scripted struct {
	CC      balancer.ClientConn
	ID      string
	Updates int      // config updates received
	Addrs   []string // first address of each endpoint of the last update
	Closed  bool
}

func (s *Scripted) UpdateClientConnState(ccs balancer.ClientConnState) error {
	cfg := ccs.BalancerConfig.(*ScriptedConfig)
	if s.ID == "" {
		s.ID = cfg.ID
		Kids[s.ID] = s
		Builds[s.ID]++
	}
	s.Updates++
	s.Addrs = nil
	for _, e := range ccs.ResolverState.Endpoints {
		s.Addrs = append(s.Addrs, e.Addresses[0].Addr)
	}
	if cfg.OnUpdate != "" {
		s.Set(stateOf(cfg.OnUpdate))
	}
	return nil
}

// Set reports st with a picker naming the child.
func (s *Scripted) Set(st connectivity.State) {
	s.CC.UpdateState(balancer.State{ConnectivityState: st, Picker: &namedPicker{s.ID}})
}

func (s *Scripted) ResolverError(error)                                        {}
func (s *Scripted) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (s *Scripted) ExitIdle()                                                  {}
func (s *Scripted) Close()                                                     { s.Closed = true }

type namedPicker struct{ id string }

func (p *namedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, status.Error(codes.Unavailable, "child "+p.id)
}

func stateOf(s string) connectivity.State {
	for _, st := range []connectivity.State{connectivity.Idle, connectivity.Connecting, connectivity.Ready, connectivity.TransientFailure} {
		if st.String() == s {
			return st
		}
	}
	panic("unknown state " + s)
}

// CfgKey is the resolver state attribute holding a root's child config.
type CfgKey struct{}

// RegisterRoot registers, as name, a root over policy.
func RegisterRoot(name, policy string) { balancer.Register(rootBuilder{name, policy}) }

type rootBuilder struct{ name, policy string }

func (b rootBuilder) Name() string { return b.name }
func (rootBuilder) OnClockSeam()   {}
func (b rootBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &root{Balancer: balancer.Get(b.policy).Build(cc, opts), policy: b.policy}
}

type root struct {
	balancer.Balancer
	policy string
}

func (r *root) UpdateClientConnState(s balancer.ClientConnState) error {
	js, _ := s.ResolverState.Attributes.Value(CfgKey{}).(string)
	cfg, err := balancer.Get(r.policy).(balancer.ConfigParser).ParseConfig(json.RawMessage(js))
	if err != nil {
		return err
	}
	s.BalancerConfig = cfg
	return r.Balancer.UpdateClientConnState(s)
}

// Push resolves cfg (for a root) with one endpoint per child, its
// hierarchical path naming the child.
func Push(t *testing.T, w *sim.Channel, cfg string, childNames ...string) {
	t.Helper()
	s := resolver.State{Attributes: attributes.New(CfgKey{}, cfg)}
	for i, n := range childNames {
		e := resolver.Endpoint{Addresses: []resolver.Address{{Addr: fmt.Sprintf("198.18.0.%d:443", i+1)}}}
		s.Endpoints = append(s.Endpoints, hierarchy.SetOnEndpoint(e, []string{n}))
	}
	if err := w.Resolve(s); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
}

// Report makes child id report st, then lets the channel deliver it.
func Report(t *testing.T, w *sim.Channel, id string, st connectivity.State) {
	t.Helper()
	k, ok := Kids[id]
	if !ok {
		t.Fatalf("child %s was never built", id)
	}
	k.Set(st)
	w.Advance(0)
}

var rpcs int

// NextRPC returns a fresh RPC id.
func NextRPC() string {
	rpcs++
	return fmt.Sprintf("r%d", rpcs)
}

// InUse returns the id of the child whose picker the channel has, by
// sending one RPC: "error: <code>: <message>" if no child's picker answered
// it, "queued" if nothing did.
func InUse(t *testing.T, w *sim.Channel) string {
	t.Helper()
	id := NextRPC()
	w.StartRPC(id, sim.RPCOptions{})
	evs := w.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.Kind == trace.KindRPCResult && e.RPC == id {
			if rest, ok := strings.CutPrefix(e.Err, "child "); ok {
				return rest
			}
			return "error: " + e.Code + ": " + e.Err
		}
	}
	return "queued"
}

// ReportedStates lists the states the policy reported to the channel from
// event index from on.
func ReportedStates(w *sim.Channel, from int) []string {
	var out []string
	for _, e := range w.Events()[from:] {
		if e.Kind == trace.KindBalancerState {
			out = append(out, e.State)
		}
	}
	return out
}
