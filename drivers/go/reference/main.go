// Command reference is conform's driver for the reference: the Go driver
// with the reference policies linked in, each wrapped in the recorder, whose
// events go out as policy lines. The reference runs through the driver
// protocol exactly like a third party.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/conformlab/conform/drivers/go/protocol"
	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference"
	"github.com/conformlab/conform/reference/priority"
)

// sinkName is the recorder sink the policy lines come from.
const sinkName = "driver"

func main() {
	s := protocol.NewSession(os.Stdout, protocol.Options{
		Impl: reference.Impl, Version: conformVersion(), ServiceConfig: wrap, RPCIDKey: recorder.RPCIDKey,
		Can:      map[string]bool{"connection_attempt_delay": true, "endpoint_attributes": true, "session_metadata": true},
		Policies: reference.StandardNames(),
		Endpoint: reference.Endpoint, // hierarchy paths for priority's children
	})
	unregister := recorder.RegisterSink(sinkName, &policySink{s})
	code := s.Serve(os.Stdin)
	unregister()
	os.Exit(code)
}

// policySink writes the recorder's events as policy lines.
type policySink struct{ s *protocol.Session }

// Record sends the policy's events; the stimuli the recorder also records
// (resolver updates) are conform's own, which records them once itself.
func (p *policySink) Record(e trace.Event) {
	if e.Source != trace.SourceHarness {
		p.s.Policy(withoutT(e))
	}
}

// conformVersion is the version of the conform module linked in.
func conformVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/conformlab/conform" && d.Replace == nil {
				return d.Version
			}
		}
	}
	return "(devel)"
}

// wrap rewrites a service config whose first loadBalancingConfig entry
// names a standard policy (pick_first by default) into one running the
// reference's policy under the recorder. Other fields are kept.
func wrap(serviceConfig string) (string, error) {
	sc := map[string]json.RawMessage{}
	if serviceConfig != "" {
		if err := json.Unmarshal([]byte(serviceConfig), &sc); err != nil {
			return "", fmt.Errorf("service config: %w", err)
		}
	}
	std, cfg, err := firstLBConfig(sc["loadBalancingConfig"])
	if err != nil {
		return "", err
	}
	name, ok := reference.Name(std)
	if !ok {
		return "", fmt.Errorf("the reference has no policy %q", std)
	}
	if cfg, err = reference.RewriteConfig(cfg); err != nil {
		return "", err
	}
	if cfg, err = withEnv(name, cfg); err != nil {
		return "", err
	}
	lb := fmt.Sprintf(`[{%q:{"sink":%q,"child":[{%q:%s}]}}]`, recorder.Name, sinkName, name, cfg)
	sc["loadBalancingConfig"] = json.RawMessage(lb)
	out, err := json.Marshal(sc)
	return string(out), err
}

// childPolicyCacheEnv is A115's revert switch. The driver reads it from its
// environment, which conform sets from the scenario (the reference's
// policies never read the environment), and gives it to every priority
// policy of the config.
const childPolicyCacheEnv = "GRPC_EXPERIMENTAL_ENABLE_PRIORITY_LB_CHILD_POLICY_CACHE"

// withEnv is the reference policy name's config with the switches of the
// driver's environment applied.
func withEnv(name, cfg string) (string, error) {
	if !strings.EqualFold(os.Getenv(childPolicyCacheEnv), "true") {
		return cfg, nil
	}
	return priority.WithChildPolicyCacheIn(name, cfg)
}

// firstLBConfig is the first policy of a loadBalancingConfig list, or
// pick_first with {} when there is none.
func firstLBConfig(list json.RawMessage) (name, config string, err error) {
	var entries []map[string]json.RawMessage
	if len(list) > 0 {
		if err := json.Unmarshal(list, &entries); err != nil {
			return "", "", fmt.Errorf("service config: loadBalancingConfig: %w", err)
		}
	}
	if len(entries) == 0 {
		return "pick_first", "{}", nil
	}
	for k, v := range entries[0] {
		return k, string(v), nil
	}
	return "", "", fmt.Errorf("service config: loadBalancingConfig[0] is empty")
}

// withoutT is e as a JSON object without its time: conform stamps each
// line when it reads it.
func withoutT(e trace.Event) json.RawMessage {
	b, _ := json.Marshal(e)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	delete(m, "t")
	out, _ := json.Marshal(m)
	return out
}
