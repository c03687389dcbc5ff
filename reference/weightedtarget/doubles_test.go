package weightedtarget

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

// Test doubles: lbtest's scripted children, under a root that passes the
// channel's ClientConn to conform_weighted_target and takes its config from
// the resolver state's attributes (lbtest.Push).

const rootName = "conform_test_wt_root"

func init() { lbtest.RegisterRoot(rootName, Name) }

// tgt is one target of a test config.
type tgt struct {
	name     string
	weight   int
	onUpdate string
}

func config(targets ...tgt) string {
	m := map[string]any{}
	for _, t := range targets {
		m[t.name] = map[string]any{"weight": t.weight, "child_policy": []any{map[string]any{lbtest.ScriptedName: map[string]string{"id": t.name, "onUpdate": t.onUpdate}}}}
	}
	js, _ := json.Marshal(map[string]any{"targets": m})
	return string(js)
}

func newWorld(t *testing.T, seed uint64) *sim.Channel {
	t.Helper()
	return lbtest.NewChannel(t, rootName, "", sim.Options{Seed: seed})
}

// push resolves cfg with one endpoint per target, its path naming it.
func push(t *testing.T, w *sim.Channel, cfg string, targets ...tgt) {
	t.Helper()
	var names []string
	for _, tg := range targets {
		names = append(names, tg.name)
	}
	lbtest.Push(t, w, cfg, names...)
}

// pickMany sends n RPCs and returns, in order, the child that answered each.
func pickMany(w *sim.Channel, n int) []string {
	ids := map[string]int{}
	for i := 0; i < n; i++ {
		id := lbtest.NextRPC()
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
