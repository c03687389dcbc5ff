package priority

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

// Test doubles: lbtest's scripted children, under a root that passes the
// channel's ClientConn to conform_priority and takes the priority config
// from the resolver state's attributes (lbtest.Push).

const rootName = "conform_test_priority_root"

func init() { lbtest.RegisterRoot(rootName, Name) }

// kid is one child of a test config: its scripted id and what it reports
// on every update.
type kid struct{ name, onUpdate string }

// config builds a priority config over scripted children, in priority order.
func config(rev string, children ...kid) string {
	var prios []string
	kidsJS := map[string]any{}
	for _, c := range children {
		prios = append(prios, c.name)
		kidsJS[c.name] = map[string]any{"config": []any{map[string]any{lbtest.ScriptedName: map[string]string{"id": c.name, "onUpdate": c.onUpdate}}}}
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

func newWorld(t *testing.T) *sim.Channel {
	t.Helper()
	return lbtest.NewChannel(t, rootName, "", sim.Options{Seed: 1})
}

// timers lists the policy's timer events of one purpose, as
// "start 10s @0s", "fire @10s", "stop @1s".
func timers(w *sim.Channel, purpose string) []string {
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

const (
	sec    = time.Second
	minute = time.Minute
)
