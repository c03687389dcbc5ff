package sim

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/trace"
)

// TestSetConfig_PushesNewConfigWithLastResolverState verifies a new LB
// config reaches the policy at once with the last resolver update's
// addresses, is recorded as config-update, and stays in force for the
// resolver updates after it.
func TestSetConfig_PushesNewConfigWithLastResolverState(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("a", addrA)
	w.AddBackend("b", addrB)
	if err := w.ResolveEndpoints([]string{addrA}, []string{addrB}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetConfig(`{"failPicks":true}`); err != nil {
		t.Fatal(err)
	}
	lb := w.bal.Current().(*testLB)
	if len(lb.updates) != 2 {
		t.Fatalf("%d updates, want 2 (the resolver's, then the config's)", len(lb.updates))
	}
	got := lb.updates[1]
	if cfg, ok := got.BalancerConfig.(*testLBConfig); !ok || !cfg.FailPicks {
		t.Errorf("config update carries %#v, want failPicks", got.BalancerConfig)
	}
	if eps := endpointAddrs(got.ResolverState); len(eps) != 2 || eps[0][0] != addrA || eps[1][0] != addrB {
		t.Errorf("config update carries endpoints %v, want the last resolver update's", eps)
	}
	if err := w.ResolveEndpoints([]string{addrB}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := lb.updates[2].BalancerConfig.(*testLBConfig); cfg == nil || !cfg.FailPicks {
		t.Errorf("the resolver update after it carries %#v, want the new config", lb.updates[2].BalancerConfig)
	}
	ev := w.Events()
	cu := kinds(ev, trace.KindConfigUpdate, "")
	if len(cu) != 1 || cu[0].Source != trace.SourceHarness || cu[0].Detail != `{"failPicks":true}` {
		t.Fatalf("config-update events = %v, want one from the harness with the JSON\n%s", cu, dump(ev))
	}
	if ru := kinds(ev, trace.KindResolverUpdate, ""); len(ru) != 2 {
		t.Errorf("%d resolver-update events, want 2: a config update is not a resolver update\n%s", len(ru), dump(ev))
	}
}

// TestSetConfig_RefusedConfigChangesNothing verifies a config the builder
// cannot parse is an error, reaches no policy and is not recorded.
func TestSetConfig_RefusedConfigChangesNothing(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetConfig(`{"failPicks":`); err == nil {
		t.Fatal("SetConfig of malformed JSON: no error")
	}
	if n := len(w.bal.Current().(*testLB).updates); n != 1 {
		t.Errorf("%d updates, want 1", n)
	}
	if cu := kinds(w.Events(), trace.KindConfigUpdate, ""); len(cu) != 0 {
		t.Errorf("config-update recorded for a refused config: %v", cu)
	}
}

// TestResolveConfig_OnePushWithNewConfig verifies a resolver update carrying
// a changed LB config reaches the policy in one call with both, records
// config-update before resolver-update, and records no config-update when the
// config is the one in force.
func TestResolveConfig_OnePushWithNewConfig(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("a", addrA)
	st := func(addrs ...string) resolver.State {
		var s resolver.State
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: a}}})
		}
		return s
	}
	if err := w.ResolveConfig(st(addrA), `{}`); err != nil {
		t.Fatal(err)
	}
	if err := w.ResolveConfig(st(addrA, addrB), `{"failPicks":true}`); err != nil {
		t.Fatal(err)
	}
	lb := w.bal.Current().(*testLB)
	if len(lb.updates) != 2 {
		t.Fatalf("%d updates, want 2 (one per ResolveConfig)", len(lb.updates))
	}
	if cfg, ok := lb.updates[1].BalancerConfig.(*testLBConfig); !ok || !cfg.FailPicks {
		t.Errorf("second update carries %#v, want failPicks", lb.updates[1].BalancerConfig)
	}
	if eps := endpointAddrs(lb.updates[1].ResolverState); len(eps) != 2 {
		t.Errorf("second update carries endpoints %v, want two", eps)
	}
	ev := w.Events()
	var got []trace.Kind
	for _, e := range ev {
		if e.Source == trace.SourceHarness {
			got = append(got, e.Kind)
		}
	}
	want := []trace.Kind{trace.KindResolverUpdate, trace.KindConfigUpdate, trace.KindResolverUpdate}
	if !slices.Equal(got, want) {
		t.Errorf("harness events %v, want %v\n%s", got, want, dump(ev))
	}
	if err := w.ResolveConfig(st(addrA), `{"failPicks":`); err == nil {
		t.Error("ResolveConfig with malformed JSON: no error")
	}
	if n := len(lb.updates); n != 2 {
		t.Errorf("%d updates after a refused config, want 2", n)
	}
}

// TestRecord_StampsExternalEvent verifies Record keeps the event's source
// and stamps it with the Channel's time.
func TestRecord_StampsExternalEvent(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.Advance(5 * time.Millisecond)
	w.Record(trace.Event{Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest, T: time.Hour})
	ev := kinds(w.Events(), trace.KindXDSRequest, "")
	if len(ev) != 1 || ev[0].T != 5*time.Millisecond || ev[0].Source != trace.SourceControlPlane {
		t.Errorf("recorded %v, want one control-plane event at 5ms", ev)
	}
}
