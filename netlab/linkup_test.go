package netlab

import "testing"

// TestLab_FirstConnectionAfterStart verifies that a lab is ready when Start
// returns: the very first connection to each family of a backend is
// established at once, not lost to a link or an IPv6 address still coming up
// (which costs the 1 s SYN retransmission). Repeated, since the race it
// guards against was lost in about one start out of three.
func TestLab_FirstConnectionAfterStart(t *testing.T) {
	for i := range 50 {
		l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}}})
		for _, ap := range l.Backend("b1").Addrs() {
			if got := probe(t, l, ap); got != outEstablished {
				t.Fatalf("start %d: first connection to %s: %s, want %s", i, ap, got, outEstablished)
			}
		}
		l.Close()
	}
}
