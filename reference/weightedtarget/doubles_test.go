package weightedtarget

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

// Test doubles, as in conform_priority's tests: scripted is a seam-aware
// child whose state the test sets and whose picker fails every pick with a
// status naming it; root passes the channel's ClientConn to
// conform_weighted_target and takes its config from the resolver state's
// attributes, so that a test can push config updates.

const (
	scriptedName = "conform_test_scripted"
	rootName     = "conform_test_wt_root"
)

func init() {
	balancer.Register(scriptedBuilder{})
	balancer.Register(rootBuilder{})
}

var (
	kids   map[string]*scripted
	builds map[string]int
)

type scriptedConfig struct {
	serviceconfig.LoadBalancingConfig
	ID       string `json:"id"`
	OnUpdate string `json:"onUpdate"`
}

type scriptedBuilder struct{}

func (scriptedBuilder) Name() string { return scriptedName }
func (scriptedBuilder) OnClockSeam() {}
func (scriptedBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &scriptedConfig{}
	return c, json.Unmarshal(js, c)
}
func (scriptedBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &scripted{cc: cc}
}

type scripted struct {
	cc      balancer.ClientConn
	id      string
	updates int
	addrs   []string
	closed  bool
}

func (s *scripted) UpdateClientConnState(ccs balancer.ClientConnState) error {
	cfg := ccs.BalancerConfig.(*scriptedConfig)
	if s.id == "" {
		s.id = cfg.ID
		kids[s.id] = s
		builds[s.id]++
	}
	s.updates++
	s.addrs = nil
	for _, e := range ccs.ResolverState.Endpoints {
		s.addrs = append(s.addrs, e.Addresses[0].Addr)
	}
	if cfg.OnUpdate != "" {
		s.set(stateOf(cfg.OnUpdate))
	}
	return nil
}

func (s *scripted) set(st connectivity.State) {
	s.cc.UpdateState(balancer.State{ConnectivityState: st, Picker: &namedPicker{s.id}})
}

func (s *scripted) ResolverError(error)                                        {}
func (s *scripted) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (s *scripted) ExitIdle()                                                  {}
func (s *scripted) Close()                                                     { s.closed = true }

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

type cfgKey struct{}

type rootBuilder struct{}

func (rootBuilder) Name() string { return rootName }
func (rootBuilder) OnClockSeam() {}
func (rootBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &root{Balancer: balancer.Get(Name).Build(cc, opts)}
}

type root struct{ balancer.Balancer }

func (r *root) UpdateClientConnState(s balancer.ClientConnState) error {
	js, _ := s.ResolverState.Attributes.Value(cfgKey{}).(string)
	cfg, err := balancer.Get(Name).(balancer.ConfigParser).ParseConfig(json.RawMessage(js))
	if err != nil {
		return err
	}
	s.BalancerConfig = cfg
	return r.Balancer.UpdateClientConnState(s)
}

// tgt is one target of a test config.
type tgt struct {
	name     string
	weight   int
	onUpdate string
}

func config(targets ...tgt) string {
	m := map[string]any{}
	for _, t := range targets {
		m[t.name] = map[string]any{"weight": t.weight, "child_policy": []any{map[string]any{scriptedName: map[string]string{"id": t.name, "onUpdate": t.onUpdate}}}}
	}
	js, _ := json.Marshal(map[string]any{"targets": m})
	return string(js)
}

func newWorld(t *testing.T, seed uint64) *sim.World {
	t.Helper()
	kids, builds = map[string]*scripted{}, map[string]int{}
	w, err := sim.New(rootName, "", sim.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			evs := w.Events()
			for _, e := range evs[max(0, len(evs)-60):] {
				t.Logf("%v", e)
			}
		}
		w.Close()
	})
	return w
}

// push resolves cfg with one endpoint per target, its path naming it.
func push(t *testing.T, w *sim.World, cfg string, targets ...tgt) {
	t.Helper()
	s := resolver.State{Attributes: attributes.New(cfgKey{}, cfg)}
	for i, tg := range targets {
		e := resolver.Endpoint{Addresses: []resolver.Address{{Addr: fmt.Sprintf("198.18.0.%d:443", i+1)}}}
		s.Endpoints = append(s.Endpoints, hierarchy.SetOnEndpoint(e, []string{tg.name}))
	}
	if err := w.Resolve(s); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
}

func report(t *testing.T, w *sim.World, id string, st connectivity.State) {
	t.Helper()
	kids[id].set(st)
	w.Advance(0)
}

var rpcs int

// picked sends one RPC and returns the child whose picker answered it.
func picked(t *testing.T, w *sim.World) string {
	t.Helper()
	rpcs++
	id := fmt.Sprintf("r%d", rpcs)
	w.StartRPC(id, sim.RPCOptions{})
	evs := w.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.Kind == trace.KindRPCResult && e.RPC == id {
			if rest, ok := strings.CutPrefix(e.Err, "child "); ok {
				return rest
			}
			return "error: " + e.Err
		}
	}
	return "queued"
}

// pickMany sends n RPCs and returns, in order, the child that answered each.
func pickMany(w *sim.World, n int) []string {
	ids := map[string]int{}
	for i := 0; i < n; i++ {
		rpcs++
		id := fmt.Sprintf("r%d", rpcs)
		ids[id] = i
		w.StartRPC(id, sim.RPCOptions{})
	}
	out := make([]string, n)
	for _, e := range w.Events() {
		if i, ok := ids[e.RPC]; ok && e.Kind == trace.KindRPCResult {
			out[i] = strings.TrimPrefix(e.Err, "child ")
		}
	}
	return out
}

func states(w *sim.World, from int) []string {
	var out []string
	for _, e := range w.Events()[from:] {
		if e.Kind == trace.KindBalancerState {
			out = append(out, e.State)
		}
	}
	return out
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
