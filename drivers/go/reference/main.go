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

	"github.com/conformlab/conform/drivers/go/protocol"
	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference"
)

// sinkName is the recorder sink the policy lines come from.
const sinkName = "driver"

func main() {
	s := protocol.NewSession(os.Stdout, protocol.Options{
		Impl: reference.Impl, Version: conformVersion(), ServiceConfig: wrap, RPCIDKey: recorder.RPCIDKey,
		Can:      map[string]bool{"connection_attempt_delay": true, "endpoint_attributes": true, "session_metadata": true, "request_hash_header": true},
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
// reference's policy under the recorder, with the switches of the driver's
// environment (reference.Switches). Other fields are kept.
func wrap(serviceConfig string) (string, error) {
	sc := map[string]json.RawMessage{}
	if serviceConfig != "" {
		if err := json.Unmarshal([]byte(serviceConfig), &sc); err != nil {
			return "", fmt.Errorf("service config: %w", err)
		}
	}
	sw, err := reference.ParseSwitches(switches())
	if err != nil {
		return "", err
	}
	name, cfg, err := sw.Policy(serviceConfig)
	if err != nil {
		return "", err
	}
	lb := fmt.Sprintf(`[{%q:{"sink":%q,"child":[{%q:%s}]}}]`, recorder.Name, sinkName, name, cfg)
	sc["loadBalancingConfig"] = json.RawMessage(lb)
	out, err := json.Marshal(sc)
	return string(out), err
}

// switches are the gRPC switches the reference knows, as the driver's
// environment sets them: conform sets them from the scenario (the
// reference's policies never read the environment).
func switches() map[string]string {
	env := map[string]string{}
	for _, k := range []string{reference.SwitchAggregateClusterBackwardCompat, reference.SwitchXDSDualstackEndpoints,
		reference.SwitchPickFirstLBConfig, reference.SwitchPriorityChildPolicyCache, reference.SwitchRingHashRequestHashKey} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	return env
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
