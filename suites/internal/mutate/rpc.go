package mutate

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// RPCs' results: the driver's rpc-result (the backend that answered, or the
// status code and message) and, in the lab, the backend's rpc-served event
// of the same RPC.

func isResult(e trace.Event) bool { return e.Kind == trace.KindRPCResult }

func succeeded(e trace.Event) bool { return e.Code == "" || e.Code == "OK" }

func describeResult(e trace.Event) string {
	if succeeded(e) {
		return fmt.Sprintf("RPC %s (answered by %s %s)", e.RPC, e.Backend, at(e.T))
	}
	return fmt.Sprintf("RPC %s (failed with %s %s)", e.RPC, e.Code, at(e.T))
}

// backendNames are the scenario's backends, in its order.
func backendNames(tr *trace.Trace) []string {
	if tr.Header.Scenario == nil {
		return nil
	}
	var out []string
	for _, b := range tr.Header.Scenario.Backends {
		out = append(out, b.Name)
	}
	return out
}

// startOf is the time RPC id was sent, or -1.
func startOf(evs []trace.Event, id string) time.Duration {
	for _, e := range evs {
		if e.Kind == trace.KindRPCStart && e.RPC == id {
			return e.T
		}
	}
	return -1
}

// servedOf are the indices of the rpc-served events of the RPC whose result
// is at index i: those naming it, else the last one between its start and
// its result (the backends of the lab do not know the scenario's RPC ids).
func servedOf(evs []trace.Event, i int) []int {
	id := evs[i].RPC
	named := indicesOf(evs, func(e trace.Event) bool { return e.Kind == trace.KindRPCServed && e.RPC == id })
	if len(named) > 0 {
		return named
	}
	start := startOf(evs, id)
	var last []int
	for j := 0; j < i; j++ {
		if e := evs[j]; e.Kind == trace.KindRPCServed && start >= 0 && e.T >= start {
			last = []int{j}
		}
	}
	return last
}

// addrOfBackend is an address of backend b that the trace names, of the
// family of like when it has one: where an RPC served by b would be
// recorded.
func addrOfBackend(evs []trace.Event, b, like string) string {
	found := ""
	for _, e := range evs {
		if e.Backend != b || e.Addr == "" || e.Kind == trace.KindRPCResult {
			continue
		}
		if found == "" {
			found = e.Addr
		}
		if sameFamily(e.Addr, like) {
			return e.Addr
		}
	}
	return found
}

func sameFamily(a, b string) bool {
	x, errA := netip.ParseAddrPort(a)
	y, errB := netip.ParseAddrPort(b)
	return errA == nil && errB == nil && x.Addr().Is6() == y.Addr().Is6()
}

// failed is the status a mutation gives an RPC it fails.
const failedMessage = "mutation: no backend answered"

var serveOn = Family{
	Name:        "serve-on",
	Description: "has an RPC answered by another of the scenario's backends",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			if !succeeded(r) {
				continue
			}
			for _, b := range backendNames(tr) {
				if b == r.Backend {
					continue
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("serve-on[%s,%s]", r.RPC, b),
					Description: fmt.Sprintf("has %s answered by %s", describeResult(r), b),
					edit: func(evs []trace.Event) []trace.Event {
						for _, j := range servedOf(evs, i) {
							if a := addrOfBackend(evs, b, evs[j].Addr); a != "" {
								evs[j].Addr = a
							}
							evs[j].Backend = b
						}
						evs[i].Backend = b
						return evs
					},
				})
			}
		}
		return out
	},
}

var failRPC = Family{
	Name:        "fail-rpc",
	Description: "fails an RPC that succeeded (UNAVAILABLE)",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			if !succeeded(r) {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("fail-rpc[%s]", r.RPC),
				Description: fmt.Sprintf("fails %s with UNAVAILABLE", describeResult(r)),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Backend, evs[i].Code, evs[i].Err = "", "UNAVAILABLE", failedMessage
					return remove(evs, servedOf(evs, i))
				},
			})
		}
		return out
	},
}

var succeedRPC = Family{
	Name:        "succeed-rpc",
	Description: "has an RPC that failed answered by one of the scenario's backends",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			if succeeded(r) {
				continue
			}
			for _, b := range backendNames(tr) {
				out = append(out, Mutation{
					ID:          fmt.Sprintf("succeed-rpc[%s,%s]", r.RPC, b),
					Description: fmt.Sprintf("has %s answered by %s", describeResult(r), b),
					edit: func(evs []trace.Event) []trace.Event {
						evs[i].Backend, evs[i].Code, evs[i].Err = b, "OK", ""
						return evs
					},
				})
			}
		}
		return out
	},
}

// delays are how much later delayResult makes an RPC's result come.
var delays = []time.Duration{150 * time.Millisecond, time.Second}

var delayResult = Family{
	Name:        "delay-result",
	Description: "makes an RPC's result come later",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			for _, d := range delays {
				out = append(out, Mutation{
					ID:          fmt.Sprintf("delay-result[%s,%s]", r.RPC, signed(d)),
					Description: fmt.Sprintf("makes the result of %s come %s", describeResult(r), later(d)),
					edit: func(evs []trace.Event) []trace.Event {
						for _, j := range append(servedOf(evs, i), i) {
							evs[j].T += d
						}
						return evs
					},
				})
			}
		}
		return out
	},
}

var hurryResult = Family{
	Name:        "hurry-result",
	Description: "makes an RPC's result come 1ms after it was sent: it did not wait",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			start := startOf(evs, r.RPC)
			if start < 0 || r.T <= start+time.Millisecond {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("hurry-result[%s]", r.RPC),
				Description: fmt.Sprintf("makes the result of %s come 1ms after it was sent (%s)", describeResult(r), at(start)),
				edit: func(evs []trace.Event) []trace.Event {
					for _, j := range append(servedOf(evs, i), i) {
						evs[j].T = start + time.Millisecond
					}
					return evs
				},
			})
		}
		return out
	},
}

var setCode = Family{
	Name:        "set-code",
	Description: "changes the status code of an RPC that failed (UNAVAILABLE and DEADLINE_EXCEEDED, one for the other)",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			if succeeded(r) {
				continue
			}
			code := "UNAVAILABLE"
			if r.Code == code {
				code = "DEADLINE_EXCEEDED"
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("set-code[%s,%s]", r.RPC, code),
				Description: fmt.Sprintf("makes %s fail with %s", describeResult(r), code),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Code = code
					return evs
				},
			})
		}
		return out
	},
}

var clearErr = Family{
	Name:        "clear-err",
	Description: "removes the status message of an RPC that failed",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			if succeeded(r) || r.Err == "" {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("clear-err[%s]", r.RPC),
				Description: fmt.Sprintf("removes the status message of %s", describeResult(r)),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Err = ""
					return evs
				},
			})
		}
		return out
	},
}

// addrInText finds "ip:port" addresses, IPv6 in brackets, in free text.
var addrInText = regexp.MustCompile(`\[[0-9a-fA-F:.]+\]:[0-9]+|[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+:[0-9]+`)

var dropErrAddress = Family{
	Name:        "drop-err-address",
	Description: "removes the addresses from the status message of an RPC that failed: the message no longer says which connection failed",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			if succeeded(r) || !addrInText.MatchString(r.Err) {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("drop-err-address[%s]", r.RPC),
				Description: fmt.Sprintf("removes the addresses from the status message of %s", describeResult(r)),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Err = strings.TrimSpace(addrInText.ReplaceAllString(evs[i].Err, "a backend"))
					return evs
				},
			})
		}
		return out
	},
}

var repick = Family{
	Name:        "repick",
	Description: "has an RPC picked on, and served over, another address the client knew",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		addrs := attemptedAddrs(evs)
		for _, i := range indicesOf(evs, isResult) {
			r := evs[i]
			picks := indicesOf(evs, func(e trace.Event) bool { return e.Kind == trace.KindPick && e.RPC == r.RPC && e.Addr != "" })
			if !succeeded(r) || len(picks) == 0 {
				continue
			}
			last := picks[len(picks)-1]
			for _, addr := range addrs {
				if addr == evs[last].Addr {
					continue
				}
				sc := ""
				for _, e := range evs[:last] {
					if e.Kind == trace.KindSubchannelNew && len(e.Addrs) > 0 && e.Addrs[0] == addr {
						sc = e.Subchannel
					}
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("repick[%s,%s]", r.RPC, addr),
					Description: fmt.Sprintf("has RPC %s picked on %s (not %s) and served over it", r.RPC, addr, evs[last].Addr),
					edit: func(evs []trace.Event) []trace.Event {
						evs[last].Addr, evs[last].Subchannel = addr, sc
						for _, j := range servedOf(evs, i) {
							evs[j].Addr = addr
						}
						return evs
					},
				})
			}
		}
		return out
	},
}
