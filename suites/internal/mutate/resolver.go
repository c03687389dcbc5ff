package mutate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/trace"
)

// What a client's own xDS resolver gave its channel: with an xDS target the
// resolver-update and config-update events are the implementation's output
// (its xDS client and resolver turned the management server's resources
// into endpoints and an LB policy tree), not the harness's stimuli. These
// families change them, from the first config-update on, and only in such
// traces; and the subchannels the policy made of the endpoints.

// resolverOutput reports whether the trace's resolver updates and configs
// are the client's xDS resolver's output: the client spoke to the xDS
// management server.
func resolverOutput(tr *trace.Trace) bool {
	return slices.ContainsFunc(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindXDSRequest })
}

// IsStimulus reports whether e is one of the harness's stimuli, which no
// mutation changes: every harness event but the client's DNS queries (the
// harness's DNS server records them) and, in a trace whose client resolves
// through xDS, the resolver updates and configs its resolver gave the
// channel.
func IsStimulus(tr *trace.Trace, e trace.Event) bool {
	if e.Source != trace.SourceHarness || e.Kind == trace.KindDNSQuery {
		return false
	}
	return !(resolverOutput(tr) && (e.Kind == trace.KindResolverUpdate || e.Kind == trace.KindConfigUpdate))
}

// outputUpdates are the indices of the resolver updates an xDS resolver
// gave the channel: those from its first config on.
func outputUpdates(tr *trace.Trace) []int {
	if !resolverOutput(tr) {
		return nil
	}
	first := slices.IndexFunc(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindConfigUpdate })
	if first < 0 {
		return nil
	}
	return indicesOf(tr.Events, func(e trace.Event) bool {
		return e.Kind == trace.KindResolverUpdate && e.T >= tr.Events[first].T
	})
}

func outputConfigs(tr *trace.Trace) []int {
	if !resolverOutput(tr) {
		return nil
	}
	return indicesOf(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindConfigUpdate })
}

func describeUpdate(evs []trace.Event, k, i int) string {
	return fmt.Sprintf("the %s resolver update the xDS resolver gave the channel (%s)", ordinal(k+1), at(evs[i].T))
}

var splitEndpoint = Family{
	Name:        "split-endpoint",
	Description: "has the client's xDS resolver give an endpoint's addresses as endpoints of their own",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range outputUpdates(tr) {
			for n, ep := range evs[i].Endpoints {
				if len(ep) < 2 {
					continue
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("split-endpoint[%d,%d]", k+1, n+1),
					Description: fmt.Sprintf("splits endpoint %v of %s into one endpoint per address", ep, describeUpdate(evs, k, i)),
					edit: func(evs []trace.Event) []trace.Event {
						var eps [][]string
						for m, e := range evs[i].Endpoints {
							if m != n {
								eps = append(eps, e)
								continue
							}
							for _, a := range e {
								eps = append(eps, []string{a})
							}
						}
						evs[i].Endpoints = eps
						return evs
					},
				})
			}
		}
		return out
	},
}

var reverseEndpoint = Family{
	Name:        "reverse-endpoint",
	Description: "has the client's xDS resolver give an endpoint's addresses in the reverse order",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range outputUpdates(tr) {
			for n, ep := range evs[i].Endpoints {
				if len(ep) < 2 {
					continue
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("reverse-endpoint[%d,%d]", k+1, n+1),
					Description: fmt.Sprintf("reverses the addresses of endpoint %v of %s", ep, describeUpdate(evs, k, i)),
					edit: func(evs []trace.Event) []trace.Event {
						slices.Reverse(evs[i].Endpoints[n])
						return evs
					},
				})
			}
		}
		return out
	},
}

var staleUpdate = Family{
	Name:        "stale-update",
	Description: "has the client's xDS resolver give the channel its previous endpoints again instead of the new ones",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		ups := outputUpdates(tr)
		for k := 1; k < len(ups); k++ {
			i, prev := ups[k], ups[k-1]
			if slices.EqualFunc(evs[i].Endpoints, evs[prev].Endpoints, slices.Equal) {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("stale-update[%d]", k+1),
				Description: fmt.Sprintf("gives the endpoints of the update before instead of those of %s", describeUpdate(evs, k, i)),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Endpoints = cloneEvents([]trace.Event{evs[prev]})[0].Endpoints
					return evs
				},
			})
		}
		return out
	},
}

func describeConfig(evs []trace.Event, k, i int) string {
	return fmt.Sprintf("the %s LB config the xDS resolver gave the channel (%s)", ordinal(k+1), at(evs[i].T))
}

var reversePriorities = Family{
	Name:        "reverse-priorities",
	Description: "has the client's xDS resolver give the LB config's top priority list in the reverse order",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range outputConfigs(tr) {
			detail, ok := reversedPriorities(evs[i].Detail)
			if !ok {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("reverse-priorities[%d]", k+1),
				Description: "reverses the outermost priority list of " + describeConfig(evs, k, i),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Detail = detail
					return evs
				},
			})
		}
		return out
	},
}

// reversedPriorities is the JSON config text with its outermost
// "priorities" list (breadth first, keys in order) of two or more reversed.
func reversedPriorities(text string) (string, bool) {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", false
	}
	queue := []any{v}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		switch n := n.(type) {
		case map[string]any:
			if ps, ok := n["priorities"].([]any); ok && len(ps) > 1 {
				slices.Reverse(ps)
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(v); err != nil {
					return "", false
				}
				return strings.TrimSuffix(b.String(), "\n"), true
			}
			keys := make([]string, 0, len(n))
			for k := range n {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				queue = append(queue, n[k])
			}
		case []any:
			queue = append(queue, n...)
		}
	}
	return "", false
}

// policyName finds the policies an LB config names: its keys "conform_…".
var policyName = regexp.MustCompile(`"(conform_[a-z_]+)":`)

// leaves are the policies that pick among endpoints.
var leaves = []string{"conform_pick_first", "conform_round_robin", "conform_ring_hash"}

func policiesIn(text string) []string {
	var out []string
	for _, m := range policyName.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

var renamePolicy = Family{
	Name:        "rename-policy",
	Description: "has the client's xDS resolver name another endpoint-picking policy (pick_first, round_robin, ring_hash) in the LB config than the one it named",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range outputConfigs(tr) {
			for _, from := range policiesIn(evs[i].Detail) {
				if !slices.Contains(leaves, from) {
					continue
				}
				for _, to := range leaves {
					if to == from {
						continue
					}
					out = append(out, Mutation{
						ID:          fmt.Sprintf("rename-policy[%d,%s,%s]", k+1, from, to),
						Description: fmt.Sprintf("names %s wherever %s names %s", to, describeConfig(evs, k, i), from),
						edit: func(evs []trace.Event) []trace.Event {
							evs[i].Detail = strings.ReplaceAll(evs[i].Detail, `"`+from+`":`, `"`+to+`":`)
							return evs
						},
					})
				}
			}
		}
		return out
	},
}

var swapPolicies = Family{
	Name:        "swap-policies",
	Description: "exchanges two policies' places in the LB config the client's xDS resolver gave (their names, one for the other)",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range outputConfigs(tr) {
			ps := policiesIn(evs[i].Detail)
			for x, a := range ps {
				for _, b := range ps[x+1:] {
					out = append(out, Mutation{
						ID:          fmt.Sprintf("swap-policies[%d,%s,%s]", k+1, a, b),
						Description: fmt.Sprintf("exchanges %s and %s in %s", a, b, describeConfig(evs, k, i)),
						edit: func(evs []trace.Event) []trace.Event {
							const mark = "\x00"
							d := strings.ReplaceAll(evs[i].Detail, `"`+a+`":`, mark)
							d = strings.ReplaceAll(d, `"`+b+`":`, `"`+a+`":`)
							evs[i].Detail = strings.ReplaceAll(d, mark, `"`+b+`":`)
							return evs
						},
					})
				}
			}
		}
		return out
	},
}

var widenSubchannel = Family{
	Name:        "widen-subchannel",
	Description: "has the policy make one subchannel for all of an endpoint's addresses instead of one for its first",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		var eps [][]string
		n := 0
		for i, e := range evs {
			if e.Kind == trace.KindResolverUpdate {
				eps = e.Endpoints
			}
			if e.Kind != trace.KindSubchannelNew || len(e.Addrs) != 1 {
				continue
			}
			n++
			k := slices.IndexFunc(eps, func(ep []string) bool { return len(ep) > 1 && slices.Contains(ep, e.Addrs[0]) })
			if k < 0 {
				continue
			}
			addrs := []string{e.Addrs[0]}
			for _, a := range eps[k] {
				if a != e.Addrs[0] {
					addrs = append(addrs, a)
				}
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("widen-subchannel[%d]", n),
				Description: fmt.Sprintf("makes the %s subchannel (%s, %s) for its endpoint's addresses %v", ordinal(n), e.Subchannel, at(e.T), addrs),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Addrs = addrs
					return evs
				},
			})
		}
		return out
	},
}
