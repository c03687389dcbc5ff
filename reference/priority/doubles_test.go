package priority

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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

// Test doubles.
//
// scripted is a seam-aware child policy whose state the test sets: it
// reports exactly what it is told (plus, optionally, a state on every
// config update), and its picker fails every pick with a status naming the
// child, so an RPC's result says whose picker is in use.
//
// root is a seam-aware parent that passes the channel's ClientConn straight
// to conform_priority and takes the priority config from the resolver
// state's attributes, so that a test can push config updates (the simulator
// parses its LB config once, in sim.New).

const (
	scriptedName = "conform_test_scripted"
	rootName     = "conform_test_priority_root"
)

func init() {
	balancer.Register(scriptedBuilder{})
	balancer.Register(rootBuilder{})
}

// kids is the live scripted child of each id; builds counts builds per id.
// Tests are not parallel: one World at a time, all on the test goroutine.
var (
	kids   map[string]*scripted
	builds map[string]int
)

type scriptedConfig struct {
	serviceconfig.LoadBalancingConfig
	ID       string `json:"id"`
	OnUpdate string `json:"onUpdate"` // a state to report on every update
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

// Helpers.

// kid is one child of a test config: its scripted id and what it reports
// on every update.
type kid struct{ name, onUpdate string }

// config builds a priority config over scripted children, in priority order.
func config(rev string, children ...kid) string {
	var prios []string
	kidsJS := map[string]any{}
	for _, c := range children {
		prios = append(prios, c.name)
		kidsJS[c.name] = map[string]any{"config": []any{map[string]any{scriptedName: map[string]string{"id": c.name, "onUpdate": c.onUpdate}}}}
	}
	js, _ := json.Marshal(map[string]any{"children": kidsJS, "priorities": prios, "revision": rev})
	return string(js)
}

func names(ns ...string) []kid {
	var out []kid
	for _, n := range ns {
		out = append(out, kid{name: n})
	}
	return out
}

func newWorld(t *testing.T) *sim.World {
	t.Helper()
	kids, builds = map[string]*scripted{}, map[string]int{}
	w, err := sim.New(rootName, "", sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, e := range w.Events() {
				t.Logf("%v", e)
			}
		}
		w.Close()
	})
	return w
}

// push resolves cfg with one endpoint per child, its path naming the child.
func push(t *testing.T, w *sim.World, cfg string, childNames ...string) {
	t.Helper()
	s := resolver.State{Attributes: attributes.New(cfgKey{}, cfg)}
	for i, n := range childNames {
		e := resolver.Endpoint{Addresses: []resolver.Address{{Addr: fmt.Sprintf("198.18.0.%d:443", i+1)}}}
		s.Endpoints = append(s.Endpoints, hierarchy.SetOnEndpoint(e, []string{n}))
	}
	if err := w.Resolve(s); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
}

// report makes child id report st, then lets the World deliver it.
func report(t *testing.T, w *sim.World, id string, st connectivity.State) {
	t.Helper()
	k, ok := kids[id]
	if !ok {
		t.Fatalf("child %s was never built", id)
	}
	k.set(st)
	w.Advance(0)
}

var rpcs int

// inUse returns the id of the child whose picker the channel has, by
// sending one RPC.
func inUse(t *testing.T, w *sim.World) string {
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
			return "error: " + e.Code + ": " + e.Err
		}
	}
	return "queued"
}

// timers lists the policy's timer events of one purpose, as
// "start 10s @0s", "fire @10s", "stop @1s".
func timers(w *sim.World, purpose string) []string {
	var out []string
	for _, e := range w.Events() {
		if e.Timer != purpose {
			continue
		}
		switch e.Kind {
		case trace.KindTimerStart:
			out = append(out, fmt.Sprintf("start %v @%v", e.Duration, e.T))
		case trace.KindTimerFire:
			out = append(out, fmt.Sprintf("fire @%v", e.T))
		case trace.KindTimerStop:
			out = append(out, fmt.Sprintf("stop @%v", e.T))
		}
	}
	return out
}

// states lists the states the policy reported to the channel from event
// index from on.
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

const (
	sec    = time.Second
	minute = time.Minute
)
