package netlab

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestLab_TwoLabsSameAddressesNoCrosstalk verifies that two labs using the
// same addresses run side by side: each client reaches only its own
// backends, and a fault in one lab does not show in the other.
func TestLab_TwoLabsSameAddressesNoCrosstalk(t *testing.T) {
	labs := map[string]*Lab{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range []string{"alpha", "beta"} {
		wg.Go(func() {
			l := startLab(t, Config{Backends: []BackendConfig{{Name: name}}, Capture: true})
			mu.Lock()
			labs[name] = l
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	alphaV6, _ := labs["alpha"].Addr("alpha", IPv6)
	betaV6, _ := labs["beta"].Addr("beta", IPv6)
	if alphaV6 != betaV6 {
		t.Fatalf("labs got different addresses %s and %s; the test needs them equal", alphaV6, betaV6)
	}
	must(t, labs["alpha"].SetFault(alphaV6, FaultReset))
	for name, l := range labs {
		for _, ap := range l.Backend(name).Addrs() {
			if name == "alpha" && ap == alphaV6 {
				if got := probe(t, l, ap, outRefused); got != outRefused {
					t.Errorf("alpha's faulted %s: %s, want %s", ap, got, outRefused)
				}
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			got, err := CallName(ctx, dialGRPC(t, l, ap.String()))
			cancel()
			if err != nil || got != name {
				t.Errorf("lab %s, %s answered %q, %v; want %q", name, ap, got, err, name)
			}
		}
	}
	for name, l := range labs { // each capture saw only its own lab's clients
		for _, e := range l.Events() {
			if e.Backend != "" && e.Backend != name {
				t.Errorf("lab %s recorded an event of backend %s: %v", name, e.Backend, e)
			}
		}
	}
}
