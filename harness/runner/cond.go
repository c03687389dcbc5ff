package runner

import (
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// watch counts the events that meet one condition, reading the trace
// incrementally: each event is examined once.
type watch struct {
	cond    scenario.Cond
	addr    string // the condition's address, made concrete; "" for any
	seen    int    // events examined so far
	matched int
	metAt   int // index of the event that met the condition; -1 until met
}

func newWatch(c scenario.Cond, addr string) *watch {
	return &watch{cond: c, addr: addr, metAt: -1}
}

// update examines the events not yet seen and reports whether the condition
// is met.
func (w *watch) update(evs []trace.Event) bool {
	for w.metAt < 0 && w.seen < len(evs) {
		if matches(w.cond, w.addr, evs[w.seen]) {
			w.matched++
			if w.matched >= w.cond.N() {
				w.metAt = w.seen
			}
		}
		w.seen++
	}
	return w.metAt >= 0
}

func matches(c scenario.Cond, addr string, e trace.Event) bool {
	return string(e.Kind) == c.Kind &&
		(c.State == "" || e.State == c.State) &&
		(addr == "" || e.Addr == addr || contains(e.Addrs, addr)) &&
		(c.Backend == "" || e.Backend == c.Backend) &&
		(c.RPC == "" || e.RPC == c.RPC) &&
		(c.Code == "" || e.Code == c.Code) &&
		(c.Timer == "" || e.Timer == c.Timer) &&
		(c.Policy == "" || e.Policy == c.Policy) &&
		(c.XDS == "" || e.XDS == c.XDS) &&
		(c.Type == "" || e.TypeURL == c.Type || trace.Lane(e) == "xds:"+c.Type)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
