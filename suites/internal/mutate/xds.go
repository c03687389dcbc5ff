package mutate

import (
	"fmt"
	"strings"

	"github.com/conformlab/conform/harness/trace"
)

// The client's answers to the xDS management server: its ACKs and NACKs
// (xds-request events that are not subscriptions).

func isXDS(kind string) func(trace.Event) bool {
	return func(e trace.Event) bool { return e.Kind == trace.KindXDSRequest && e.XDS == kind }
}

func isAnswer(e trace.Event) bool {
	return e.Kind == trace.KindXDSRequest && (e.XDS == trace.XDSACK || e.XDS == trace.XDSNACK)
}

// shortType is a type URL's last element: "Cluster".
func shortType(url string) string {
	return url[strings.LastIndex(url, ".")+1:]
}

// describeAnswer names the k-th (0-based) of the answers counted, as
// "the 2nd NACK (Cluster, version "1", at +2.000s)".
func describeAnswer(evs []trace.Event, k, i int, counted string) string {
	e := evs[i]
	what := shortType(e.TypeURL)
	if counted != e.XDS {
		what = e.XDS + " of " + what
	}
	return fmt.Sprintf("the %s %s (%s, version %q, %s)", ordinal(k+1), counted, what, e.Version, at(e.T))
}

// rejected is the version a NACK rejected: its detail's "rejected <v>",
// else "".
func rejected(e trace.Event) string {
	v, ok := strings.CutPrefix(e.Detail, "rejected ")
	if !ok {
		return ""
	}
	return v
}

var nackToACK = Family{
	Name:        "nack-to-ack",
	Description: "turns a NACK into an ACK of the version it rejected: the client accepted a resource it should have rejected",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isXDS(trace.XDSNACK)) {
			v := rejected(evs[i])
			if v == "" {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("nack-to-ack[%d]", k+1),
				Description: fmt.Sprintf("turns %s into an ACK of version %q", describeAnswer(evs, k, i, "NACK"), v),
				edit: func(evs []trace.Event) []trace.Event {
					e := &evs[i]
					e.XDS, e.Version, e.Code, e.Err, e.Detail = trace.XDSACK, v, "", "", ""
					return evs
				},
			})
		}
		return out
	},
}

var ackToNACK = Family{
	Name:        "ack-to-nack",
	Description: "turns an ACK into a NACK keeping the version accepted before: the client rejected a resource it should have accepted",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isXDS(trace.XDSACK)) {
			prev := ""
			for _, e := range evs[:i] {
				if e.Kind == trace.KindXDSRequest && e.XDS == trace.XDSACK && e.TypeURL == evs[i].TypeURL && e.Node == evs[i].Node {
					prev = e.Version
				}
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("ack-to-nack[%d]", k+1),
				Description: fmt.Sprintf("turns %s into a NACK", describeAnswer(evs, k, i, "ACK")),
				edit: func(evs []trace.Event) []trace.Event {
					e := &evs[i]
					e.XDS, e.Detail, e.Version = trace.XDSNACK, "rejected "+e.Version, prev
					e.Code, e.Err = "INVALID_ARGUMENT", "mutation: the resource was rejected"
					return evs
				},
			})
		}
		return out
	},
}

var nackNewVersion = Family{
	Name:        "nack-new-version",
	Description: "makes a NACK carry the version it rejected instead of the last one accepted",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isXDS(trace.XDSNACK)) {
			v := rejected(evs[i])
			if v == "" || v == evs[i].Version {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("nack-new-version[%d]", k+1),
				Description: fmt.Sprintf("makes %s carry version %q, the one it rejected", describeAnswer(evs, k, i, "NACK"), v),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Version = v
					return evs
				},
			})
		}
		return out
	},
}

var nackClearErr = Family{
	Name:        "nack-clear-err",
	Description: "removes a NACK's error detail",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isXDS(trace.XDSNACK)) {
			if evs[i].Err == "" {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("nack-clear-err[%d]", k+1),
				Description: fmt.Sprintf("removes the error detail of %s", describeAnswer(evs, k, i, "NACK")),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Err = ""
					return evs
				},
			})
		}
		return out
	},
}

var dropXDS = Family{
	Name:        "drop-xds-answer",
	Description: "removes one ACK or NACK: the client never answered that response",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isAnswer) {
			out = append(out, Mutation{
				ID:          fmt.Sprintf("drop-xds-answer[%d]", k+1),
				Description: "removes " + describeAnswer(evs, k, i, "answer"),
				edit:        func(evs []trace.Event) []trace.Event { return remove(evs, []int{i}) },
			})
		}
		return out
	},
}
