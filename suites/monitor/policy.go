package monitor

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// policy is the client's root LB policy as a trace's header says it: its
// name in standard words ("pick_first"; "xds" for an xDS client, whose
// root policies the xDS resolver builds) and its config.
type policy struct {
	name   string
	config map[string]json.RawMessage
}

// rootPolicy is the client's root policy, or why it is not known: the
// header has no scenario, or the run changed the config.
func rootPolicy(tr *trace.Trace) (policy, string) {
	s := tr.Header.Scenario
	if s == nil {
		return policy{}, "the trace does not say the client's LB configuration"
	}
	if s.Client.Target == scenario.TargetXDS {
		return policy{name: "xds"}, "" // its config-updates are what xDS gives it
	}
	if cs := spec.Of(tr, trace.KindConfigUpdate); len(cs) > 0 {
		return policy{}, fmt.Sprintf("the client's LB config changed during the run (at %s): the monitor judges a run of one policy", trace.FormatT(cs[0].T))
	}
	sc := s.Client.EffectiveServiceConfig()
	if sc == "" {
		return policy{name: "pick_first"}, "" // gRPC's default policy
	}
	var doc struct {
		LB []map[string]map[string]json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal([]byte(sc), &doc); err != nil || len(doc.LB) == 0 {
		return policy{name: "pick_first"}, "" // no LB config: the default
	}
	for name, cfg := range doc.LB[0] {
		return policy{name: strings.TrimPrefix(name, "conform_"), config: cfg}, ""
	}
	return policy{name: "pick_first"}, ""
}

// pickFirstApplies says why a rule of pick_first's does not apply to tr's
// run: its root policy is another, or not known.
func pickFirstApplies(tr *trace.Trace) string {
	p, why := rootPolicy(tr)
	switch {
	case why != "":
		return why
	case p.name != "pick_first":
		return fmt.Sprintf("the client's root policy is %s, not pick_first", p.name)
	}
	return ""
}

// connectionAttemptDelay is the Connection Attempt Delay pick_first's
// config sets (the reference's knob, which A61 lets an implementation
// have), clamped to [100 ms, 2 s] (A61, Happy Eyeballs in the pick_first LB
// Policy), and whether it sets one.
func connectionAttemptDelay(tr *trace.Trace) (time.Duration, bool) {
	p, _ := rootPolicy(tr)
	raw, ok := p.config["connectionAttemptDelay"]
	if !ok {
		return defaultDelay, false
	}
	var s string
	d, err := time.Duration(0), json.Unmarshal(raw, &s)
	if err == nil {
		d, err = time.ParseDuration(s)
	}
	if err != nil {
		return defaultDelay, true
	}
	return min(max(d, 100*time.Millisecond), 2*time.Second), true
}

// defaultDelay is A61's Connection Attempt Delay with nothing configured.
const defaultDelay = 250 * time.Millisecond

// shuffles reports whether pick_first's config asks for A62's shuffle.
func shuffles(tr *trace.Trace) bool {
	p, _ := rootPolicy(tr)
	return string(p.config["shuffleAddressList"]) == "true"
}
