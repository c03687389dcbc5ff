package trace

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// String renders e on one line for people: the time since the start, the
// source and kind, then the fields that are set, for example
//
//	+250.9ms capture syn [fd00::1]:50051 retransmit
//	+20.000s driver channel-state TRANSIENT_FAILURE
//
// The address, state and fault stand alone; other fields are key=value.
// Comparison output and test failure messages use it.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(FormatT(e.T))
	b.WriteString(" " + string(e.Source) + " " + string(e.Kind))
	word := func(s string) {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	raw := func(k, v string) { b.WriteString(" " + k + "=" + v) }
	kv := func(k, v string) {
		if v != "" {
			raw(k, quoteIfNeeded(v))
		}
	}
	word(e.Addr)
	word(e.State)
	word(e.Fault)
	kv("service", e.Service)
	kv("sc", e.Subchannel)
	kv("rpc", e.RPC)
	kv("backend", e.Backend)
	kv("policy", e.Policy)
	kv("code", e.Code)
	kv("timer", e.Timer)
	if e.TimerID != 0 {
		kv("timer_id", strconv.FormatUint(e.TimerID, 10))
	}
	if e.Duration != 0 {
		kv("duration", e.Duration.String())
	}
	if e.Port != 0 {
		kv("port", strconv.Itoa(e.Port))
	}
	kv("peer", e.Peer)
	kv("method", e.Method)
	if len(e.Addrs) > 0 {
		raw("addrs", "["+strings.Join(e.Addrs, " ")+"]")
	}
	if len(e.SessionAddrs) > 0 {
		raw("session_addrs", "["+strings.Join(e.SessionAddrs, " ")+"]")
	}
	if len(e.Endpoints) > 0 {
		raw("endpoints", formatEndpoints(e.Endpoints))
	}
	if e.Retransmit {
		word("retransmit")
	}
	if e.WaitForReady {
		word("wait_for_ready")
	}
	kv("node", e.Node)
	kv("type_url", e.TypeURL)
	kv("xds", e.XDS)
	kv("version", e.Version)
	kv("nonce", e.Nonce)
	if len(e.Names) > 0 {
		raw("names", "["+strings.Join(e.Names, " ")+"]")
	}
	kv("err", e.Err)
	kv("detail", e.Detail)
	return b.String()
}

// FormatT renders a time since the start: "+250.9ms" below one second (to
// 0.1 ms), "+20.000s" from there (to 1 ms), rounded to nearest.
func FormatT(t time.Duration) string {
	sign := "+"
	if t < 0 {
		sign, t = "-", -t
	}
	if t < time.Second-50*time.Microsecond {
		tenths := (t + 50*time.Microsecond) / (100 * time.Microsecond)
		return fmt.Sprintf("%s%d.%dms", sign, tenths/10, tenths%10)
	}
	ms := (t + 500*time.Microsecond) / time.Millisecond
	return fmt.Sprintf("%s%d.%03ds", sign, ms/1000, ms%1000)
}

func formatEndpoints(eps [][]string) string {
	parts := make([]string, len(eps))
	for i, ep := range eps {
		parts[i] = "[" + strings.Join(ep, " ") + "]"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// quoteIfNeeded quotes v when it would be ambiguous bare: when it holds
// spaces, quotes, '=' or characters that are not printable.
func quoteIfNeeded(v string) string {
	if strings.ContainsAny(v, " \t\n\"=") || strconv.Quote(v) != `"`+v+`"` {
		return strconv.Quote(v)
	}
	return v
}
