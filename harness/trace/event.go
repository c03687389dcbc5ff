// Package trace defines conform's trace: a header and time-stamped events,
// serialized as JSON Lines. The format is documented for other languages in
// traces/README.md (with a JSON Schema), so drivers written in any language
// can emit it.
package trace

import (
	"strings"
	"time"
)

// Source says who observed an event.
type Source string

// The sources of DESIGN.md's trace format.
const (
	SourceCapture      Source = "capture"       // packets seen in the client namespace
	SourceBackend      Source = "backend"       // a lab backend: accepts, handshakes, RPCs served
	SourceDriver       Source = "driver"        // the implementation's driver: channel state, RPC results
	SourceHarness      Source = "harness"       // stimuli the harness applied: faults, resolver updates
	SourcePolicy       Source = "policy"        // LB-level events from the simulator or the recorder
	SourceControlPlane Source = "control-plane" // xDS requests, ACKs and NACKs
)

// Kind names what happened. Kinds are grouped by source; every kind is
// listed here so that readers can reject unknown ones.
type Kind string

// Capture kinds.
const (
	KindSYN    Kind = "syn"     // Addr: destination; Port: client port; Retransmit
	KindSYNACK Kind = "syn-ack" // the SYN to Addr/Port was answered
	KindRST    Kind = "rst"     // the SYN to Addr/Port was refused
)

// Backend kinds.
const (
	KindAccept    Kind = "accept"     // Backend accepted a TCP connection on Addr from Peer
	KindPreface   Kind = "preface"    // the HTTP/2 client preface arrived
	KindRPCServed Kind = "rpc-served" // Backend served an RPC (Method) on Addr for Peer; Code when it failed it (fail_rpcs)
	KindConnClose Kind = "conn-close" // Peer closed its connection to Backend on Addr (the backend did not)
	// KindHealthSent: Addr's health service sent a client watching it
	// (A17's Watch; Peer in the lab) the status a health watch reports as
	// State, for Service: the client can hear of a health-set from here.
	KindHealthSent Kind = "health-sent"
)

// Harness kinds: the stimuli.
const (
	KindResolverUpdate Kind = "resolver-update" // Endpoints pushed to the client
	KindFaultSet       Kind = "fault-set"       // Fault applied to Addr (fail_rpcs: Code, what it answers)
	KindFaultClear     Kind = "fault-clear"     // fault on Addr removed
	KindBackendDown    Kind = "backend-down"    // Backend stopped listening
	KindBackendUp      Kind = "backend-up"      // Backend listens again
	KindRPCStart       Kind = "rpc-start"       // RPC sent (WaitForReady, Deadline)
	KindResolverError  Kind = "resolver-error"  // the resolver reported Err
	KindHealthSet      Kind = "health-set"      // Addr now serves health State for Service ("" the overall health)
	KindDNSQuery       Kind = "dns-query"       // the lab DNS answered Peer: Detail is "TYPE name RCODE"
	KindExitIdle       Kind = "exit-idle"       // the channel asked the policy to leave IDLE
	KindConfigUpdate   Kind = "config-update"   // the client's LB config replaced (Detail: the policy's JSON config)
	KindNote           Kind = "note"            // free text (Detail): an observation
	// KindStall: the lab's stall watch (netlab) woke Duration late at T:
	// from T the machine ran no ready thread for Duration, and a timer
	// that expired then was observed late. Lab traces only; no lane.
	KindStall Kind = "stall"
)

// Policy kinds: what a load-balancing policy did, as the simulator or the
// recorder saw it at the balancer API (L9).
const (
	KindSubchannelNew      Kind = "subchannel-new"       // Subchannel created for Addrs
	KindSubchannelConnect  Kind = "subchannel-connect"   // Connect requested on Subchannel
	KindSubchannelAddrs    Kind = "subchannel-addresses" // Subchannel's Addrs updated by the policy
	KindSubchannelState    Kind = "subchannel-state"     // Subchannel reported State (Err)
	KindSubchannelHealth   Kind = "subchannel-health"    // health State reported for Subchannel
	KindSubchannelShutdown Kind = "subchannel-shutdown"  // Subchannel shut down by the policy
	KindBalancerState      Kind = "balancer-state"       // policy reported State with a new picker
	KindPick               Kind = "pick"                 // RPC picked Subchannel/Addr (SessionAddrs), or queued, or failed (Err)
	KindResolveNow         Kind = "resolve-now"          // policy asked for re-resolution
	KindTimerStart         Kind = "timer-start"          // Timer started for Duration
	KindTimerFire          Kind = "timer-fire"           // Timer fired
	KindTimerStop          Kind = "timer-stop"           // Timer stopped before firing
)

// Control-plane kinds: what the lab's xDS management server saw.
const (
	// KindXDSRequest: the server received a DiscoveryRequest from Node for
	// TypeURL with Names, Version (the client's version_info: the last
	// version it accepted) and Nonce (the response it answers). XDS says
	// what it was: request (no nonce: a subscription), ACK, or NACK (with
	// error_detail: Err its message, Code its status code, Detail
	// "rejected <version>" when the server knows the version it sent with
	// Nonce).
	KindXDSRequest Kind = "xds-request"
)

// What an xds-request was (Event.XDS): the xDS protocol's rule, from the
// request's own fields (no nonce: a subscription; error_detail: a NACK;
// otherwise an ACK).
const (
	XDSSubscribe = "request"
	XDSACK       = "ACK"
	XDSNACK      = "NACK"
)

// Driver kinds.
const (
	KindChannelState Kind = "channel-state" // the channel's connectivity State
	KindRPCResult    Kind = "rpc-result"    // RPC finished: Backend that answered, or Code and Err
	KindLog          Kind = "log"           // a log line from the implementation (Detail)
)

// SessionAddrsKey is the pick result metadata key under which conform's
// stand-in for the stateful session filter's call attribute carries the
// address list xds_override_host reports back for the session cookie
// (A61, Changes to Stateful Session Affinity: the address actually used
// first, then its endpoint's other addresses, comma-separated). It is the
// reference's overridehost.ActualAddressesHeader. The simulator and the
// recorder copy it into a pick event's SessionAddrs.
const SessionAddrsKey = "x-conform-session-actual"

// SplitSessionAddrs turns the metadata values under SessionAddrsKey into
// the address list; nil when there is none.
func SplitSessionAddrs(vs []string) []string {
	if len(vs) == 0 || vs[0] == "" {
		return nil
	}
	return strings.Split(vs[0], ",")
}

// Event is one line of a trace. Fields that do not apply to a kind are left
// empty and omitted from the JSON form. T is the time since the scenario
// started, in nanoseconds on one monotonic clock.
type Event struct {
	T      time.Duration `json:"t"`
	Source Source        `json:"src"`
	Kind   Kind          `json:"kind"`

	Addr         string        `json:"addr,omitempty"`          // ip:port, IPv6 in brackets
	Port         int           `json:"port,omitempty"`          // client-side port of a captured packet
	Peer         string        `json:"peer,omitempty"`          // the other end's ip:port
	Backend      string        `json:"backend,omitempty"`       // lab backend name
	Subchannel   string        `json:"subchannel,omitempty"`    // subchannel id, stable within a trace ("sc1")
	Addrs        []string      `json:"addrs,omitempty"`         // a subchannel's addresses
	SessionAddrs []string      `json:"session_addrs,omitempty"` // a pick's address list for the session cookie (SessionAddrsKey)
	Policy       string        `json:"policy,omitempty"`        // which policy in a tree ("priority/p0/pick_first")
	State        string        `json:"state,omitempty"`         // IDLE, CONNECTING, READY, TRANSIENT_FAILURE, SHUTDOWN
	Service      string        `json:"service,omitempty"`       // a health service name (health-set)
	RPC          string        `json:"rpc,omitempty"`           // the scenario's RPC id
	Method       string        `json:"method,omitempty"`        // full gRPC method name
	Code         string        `json:"code,omitempty"`          // gRPC status code name
	Timer        string        `json:"timer,omitempty"`         // timer purpose ("connection attempt delay")
	TimerID      uint64        `json:"timer_id,omitempty"`      // distinguishes timers with one purpose
	Duration     time.Duration `json:"duration,omitempty"`
	Fault        string        `json:"fault,omitempty"`      // drop, reset, stall, down, fail_rpcs
	Retransmit   bool          `json:"retransmit,omitempty"` // a SYN retransmission
	WaitForReady bool          `json:"wait_for_ready,omitempty"`
	Endpoints    [][]string    `json:"endpoints,omitempty"` // a resolver update: addresses per endpoint
	Node         string        `json:"node,omitempty"`      // xDS node id
	TypeURL      string        `json:"type_url,omitempty"`  // xDS resource type URL
	XDS          string        `json:"xds,omitempty"`       // request, ACK or NACK
	Version      string        `json:"version,omitempty"`   // xDS version_info
	Nonce        string        `json:"nonce,omitempty"`     // xDS response_nonce
	Names        []string      `json:"names,omitempty"`     // xDS resource names
	Err          string        `json:"err,omitempty"`
	Detail       string        `json:"detail,omitempty"`
}
