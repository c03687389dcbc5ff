package sim

import (
	"testing"

	"github.com/conformlab/conform/harness/trace"
)

// TestSetConfig_PushesNewConfigWithLastResolverState verifies a new LB
// config reaches the policy at once with the last resolver update's
// addresses, is recorded as config-update, and stays in force for the
// resolver updates after it.
func TestSetConfig_PushesNewConfigWithLastResolverState(t *testing.T) {
	w := newWorld(t, `{}`, Options{Seed: 1})
	w.AddBackend("a", addrA)
	w.AddBackend("b", addrB)
	if err := w.ResolveEndpoints([]string{addrA}, []string{addrB}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetConfig(`{"failPicks":true}`); err != nil {
		t.Fatal(err)
	}
	lb := w.bal.(*testLB)
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
	w := newWorld(t, `{}`, Options{Seed: 1})
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	if err := w.SetConfig(`{"failPicks":`); err == nil {
		t.Fatal("SetConfig of malformed JSON: no error")
	}
	if n := len(w.bal.(*testLB).updates); n != 1 {
		t.Errorf("%d updates, want 1", n)
	}
	if cu := kinds(w.Events(), trace.KindConfigUpdate, ""); len(cu) != 0 {
		t.Errorf("config-update recorded for a refused config: %v", cu)
	}
}
