package runner

import (
	"encoding/json"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/reference"
	"github.com/conformlab/conform/reference/overridehost"
)

// What a scenario needs of a driver, against what its hello says it can
// express (driver.Hello): a scenario it cannot express is not applicable.

// missingCapabilities names what s needs that h cannot do, or "".
func missingCapabilities(s *scenario.Scenario, h driver.Hello) string {
	var missing []string
	for _, need := range needs(s) {
		if !h.Can[need] {
			missing = append(missing, need+capabilityMeaning[need])
		}
	}
	for _, p := range scenarioPolicies(s) {
		if h.Policies != nil && !slices.Contains(h.Policies, p) {
			missing = append(missing, "the LB policy "+p)
		}
	}
	if usesDNS(h) && s.Client.Target != scenario.TargetXDS && resolverUpdates(s) > 1 {
		missing = append(missing, "a second resolver update (its only resolver is DNS, re-queried on its own schedule)")
	}
	if h.Can[driver.CanShuffle] && !h.Can[driver.CanEndpoints] && shufflesGroupedEndpoints(s) {
		missing = append(missing, "endpoints of several addresses under shuffleAddressList (a client that shuffles shuffles endpoints, never the addresses inside one: A61, Address List Handling in pick_first; the flattened list a driver without endpoints sends would have it shuffle the addresses one by one)")
	}
	if changesConfig(s) && !h.Can[driver.CanConfigUpdate] {
		missing = append(missing, "a config step (a new service config during the run: hello's "+driver.CanConfigUpdate+")")
	}
	return strings.Join(missing, ", ")
}

// capabilityMeaning says, for a capability whose name does not, what a
// scenario needing it asks of the client.
var capabilityMeaning = map[string]string{
	driver.CanHealthCheck:       " (client-side health checking, which the scenario's healthCheckConfig asks for: gRFC A17)",
	driver.CanRequestHashHeader: " (ring_hash's requestHashHeader, which the scenario's LB config sets: gRFC A76)",
	driver.CanIdleTimeout:       " (the channel's idle timeout, which the scenario's client.idle_timeout sets: A62)",
}

// changesConfig reports whether s has a config step.
func changesConfig(s *scenario.Scenario) bool {
	for _, st := range s.Steps {
		if _, ok := st.Action.(scenario.SetConfig); ok {
			return true
		}
	}
	return false
}

// scenarioPolicies lists the standard LB policy names the client's config
// and the scenario's config steps use.
func scenarioPolicies(s *scenario.Scenario) []string {
	out := policiesUsed(s.Client)
	for _, st := range s.Steps {
		if a, ok := st.Action.(scenario.SetConfig); ok {
			for _, p := range policiesUsed(scenario.Client{LBPolicy: a.LBPolicy, LBConfig: a.LBConfig, ServiceConfig: a.ServiceConfig}) {
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// policiesUsed lists the standard LB policy names the client's config uses,
// at any depth (a priority's children, say).
func policiesUsed(c scenario.Client) []string {
	var out []string
	if c.LBPolicy != "" {
		out = append(out, c.LBPolicy)
	}
	cfg := c.LBConfig + c.ServiceConfig
	for _, name := range reference.StandardNames() {
		if strings.Contains(cfg, strconv.Quote(name)+":") && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// usesDNS reports whether the driver said it cannot host the conform
// resolver, so that its addresses come from the lab DNS.
func usesDNS(h driver.Hello) bool {
	can, said := h.Can[driver.CanResolver]
	return said && !can
}

func resolverUpdates(s *scenario.Scenario) int {
	n := 0
	for _, st := range s.Steps {
		if _, ok := st.Action.(scenario.ResolverUpdate); ok {
			n++
		}
	}
	return n
}

// needs lists the capabilities s needs, in a fixed order.
func needs(s *scenario.Scenario) []string {
	set := map[string]bool{}
	if s.Client.Target == scenario.TargetXDS {
		set[driver.CanXDS] = true
	}
	if s.Client.LBPolicy != "" || s.Client.ServiceConfig != "" {
		set[driver.CanServiceConfig] = true
	}
	// shuffleAddressList needs nothing of a driver: any client that takes
	// a service config can be given it, and A62 (Enable random shuffling
	// of address list) says what one without shuffling does with it (it
	// ignores it). The catalogue scopes the rules by the driver's shuffle
	// capability instead (A62-SHUFFLE-RANDOM for those that declare it,
	// A62-SHUFFLE-UNSUPPORTED-IGNORED for the others), so such a client is
	// judged, never not-applicable.
	cfg := strings.ReplaceAll(s.Client.LBConfig+s.Client.ServiceConfig, " ", "")
	if strings.Contains(cfg, `"connectionAttemptDelay"`) {
		set[driver.CanAttemptDelay] = true
	}
	if strings.Contains(cfg, `"requestHashHeader"`) {
		set[driver.CanRequestHashHeader] = true
	}
	if s.Client.IdleTimeout > 0 {
		set[driver.CanIdleTimeout] = true
	}
	if _, on, _ := scenario.HealthCheckService(s.Client.ServiceConfig); on {
		set[driver.CanHealthCheck] = true
	}
	for _, st := range s.Steps {
		switch a := st.Action.(type) {
		case scenario.ResolverUpdate:
			if s.Client.Target == scenario.TargetDNS {
				continue // records of the lab DNS: the driver is sent no resolve command
			}
			updateNeeds(s, a, set)
			if endpointAttrs(a) != nil {
				set[driver.CanEndpointAttributes] = true
			}
			if flattensEndpoints(s.Client) {
				delete(set, driver.CanEndpoints)
			}
		case scenario.StartRPC:
			if a.WaitForReady {
				set[driver.CanWaitForReady] = true
			}
			if _, ok := a.Metadata[overridehost.SessionHeader]; ok {
				set[driver.CanSessionMetadata] = true
			}
		}
	}
	var out []string
	for _, c := range []string{driver.CanEndpoints, driver.CanEndpointAttributes, driver.CanMixedFamilies, driver.CanServiceConfig, driver.CanAttemptDelay, driver.CanHealthCheck, driver.CanRequestHashHeader, driver.CanSessionMetadata, driver.CanWaitForReady, driver.CanXDS, driver.CanIdleTimeout} {
		if set[c] {
			out = append(out, c)
		}
	}
	return out
}

// endpointAttrs are an update's endpoint attributes, one map per endpoint,
// or nil when no endpoint has any.
func endpointAttrs(a scenario.ResolverUpdate) []map[string]string {
	var out []map[string]string
	any := false
	for _, ep := range a.Endpoints {
		out = append(out, ep.Attrs)
		any = any || len(ep.Attrs) > 0
	}
	if !any {
		return nil
	}
	return out
}

// shufflesGroupedEndpoints reports whether s gives pick_first
// shuffleAddressList true and an endpoint of several addresses: then the
// flattened list is not the same scenario for a client that shuffles.
func shufflesGroupedEndpoints(s *scenario.Scenario) bool {
	var cfg struct {
		Shuffle bool `json:"shuffleAddressList"`
	}
	if !flattensEndpoints(s.Client) || json.Unmarshal([]byte(s.Client.LBConfig), &cfg) != nil || !cfg.Shuffle {
		return false
	}
	for _, st := range s.Steps {
		if a, ok := st.Action.(scenario.ResolverUpdate); ok && s.Client.Target != scenario.TargetDNS {
			for _, ep := range a.Endpoints {
				if len(ep.Addrs) > 1 {
					return true
				}
			}
		}
	}
	return false
}

// flattensEndpoints reports whether the client's policy is pick_first (the
// default), which flattens the endpoint list into one address list (A61,
// "Address List Handling in pick_first"): for it, a driver without
// endpoints expresses the scenario exactly by sending the flattened list.
func flattensEndpoints(c scenario.Client) bool {
	return c.ServiceConfig == "" && (c.LBPolicy == "" || c.LBPolicy == "pick_first")
}

// updateNeeds adds what one resolver update needs: endpoints with several
// addresses, and both families in one update.
func updateNeeds(s *scenario.Scenario, a scenario.ResolverUpdate, set map[string]bool) {
	eps, err := s.ConcreteEndpoints(a.Endpoints, AddrOf)
	if err != nil {
		return // reported when the step is applied
	}
	var v4, v6 bool
	for _, ep := range eps {
		if len(ep) > 1 {
			set[driver.CanEndpoints] = true
		}
		for _, addr := range ep {
			ap, err := netip.ParseAddrPort(addr)
			v6 = v6 || (err == nil && ap.Addr().Is6())
			v4 = v4 || (err == nil && ap.Addr().Is4())
		}
	}
	if v4 && v6 {
		set[driver.CanMixedFamilies] = true
	}
}
