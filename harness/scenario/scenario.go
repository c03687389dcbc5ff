// Package scenario is the declarative model of one conform experiment
// (DESIGN.md, "Vocabulary"): the backends and their address families, the
// client's configuration, and a timeline of stimuli.
//
// A scenario is data. It names addresses symbolically ("b1/ipv6") and never
// computes an IP: runners (the lab, the simulator) derive concrete addresses
// from a backend's index with AddrFunc, so every runner derives them the
// same way.
//
// Scenarios are written in Go with the builder (New) or in YAML (Decode,
// DecodeFile) and validated by the same checks (Validate).
//
// The resources an xds step has the lab's management server serve are a
// sub-language of their own, harness/scenario/xds; the step (SetXDS) holds
// them.
package scenario

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// Scenario is one experiment.
type Scenario struct {
	Name        string
	Description string
	Backends    []Backend
	Client      Client
	// Steps is the timeline. Steps with a fixed time (At) appear in time
	// order; steps triggered by an event (After) may appear anywhere.
	Steps []Step
	// End is when the run stops, counted from the scenario's start.
	End time.Duration
}

// Family is an IP address family.
type Family = form.Family

// The address families.
const (
	IPv4 = form.IPv4
	IPv6 = form.IPv6
)

// Stack says which families a backend listens on.
type Stack string

// The stacks a backend can have.
const (
	IPv4Only Stack = "ipv4"
	IPv6Only Stack = "ipv6"
	Dual     Stack = "dual"
)

// Families lists the families of s, IPv4 first; nil for an unknown stack.
func (s Stack) Families() []Family {
	switch s {
	case IPv4Only:
		return []Family{IPv4}
	case IPv6Only:
		return []Family{IPv6}
	case Dual:
		return []Family{IPv4, IPv6}
	}
	return nil
}

// Has reports whether s includes family f.
func (s Stack) Has(f Family) bool {
	for _, g := range s.Families() {
		if g == f {
			return true
		}
	}
	return false
}

// Backend is one server of the experiment.
type Backend struct {
	Name  string
	Stack Stack
}

// Addr is a symbolic address, "backend/family" ("b1/ipv6"); its Split
// method gives the backend name and the family. The xDS sub-language's
// endpoints (harness/scenario/xds) hold the same type.
type Addr = form.Addr

// Target forms: how the client learns its addresses.
const (
	// TargetManual: the harness pushes the timeline's resolver updates
	// straight into the client (a manual resolver). The default.
	TargetManual = "manual"
	// TargetDNS: the client resolves a name served by the lab's DNS, whose
	// records follow the timeline's resolver updates: every address of a
	// resolve step is a record (A or AAAA) of the scenario's name, and the
	// client's DNS resolver makes each its own endpoint (A61, "Allow
	// Resolvers to Return Multiple Addresses Per Endpoint").
	TargetDNS = "dns"
)

// Client is the configuration of the channel under test. At most one of
// LBPolicy and ServiceConfig is set; with neither, the channel uses its
// default policy.
type Client struct {
	Target        string // TargetManual (when empty), TargetDNS or TargetXDS
	Listener      string // with TargetXDS: the listener the client asks for
	LBPolicy      string // a registered policy name ("conform_pick_first")
	LBConfig      string // the policy's config as JSON text (an object); empty means {}
	ServiceConfig string // a whole service config as JSON text
	// Env sets gRPC environment variables for the client under test: only
	// the temporary switches the documents name (EnvVars), "true" or
	// "false". Drivers get them in their process's environment; the
	// reference, through its options (it never reads the environment).
	Env map[string]string
	// IdleTimeout is the channel's idle timeout (A62, "Use sticky-TF by
	// default": the channel goes IDLE after this long without RPC
	// activity); zero leaves the implementation's default.
	IdleTimeout time.Duration
}

// EffectiveServiceConfig is the client's LB configuration as a service
// config, in standard policy names: ServiceConfig as it is, or one made of
// LBPolicy and LBConfig; "" leaves the implementation's default.
func (c Client) EffectiveServiceConfig() string {
	if c.ServiceConfig != "" {
		return c.ServiceConfig
	}
	if c.LBPolicy == "" {
		return ""
	}
	cfg := c.LBConfig
	if cfg == "" {
		cfg = "{}"
	}
	return fmt.Sprintf(`{"loadBalancingConfig":[{%q:%s}]}`, c.LBPolicy, cfg)
}

// HealthCheckService reads a service config's healthCheckConfig (A17,
// Service Config Changes): on is true when it names a serviceName, the
// health service name the client's health checks ask for ("" is the
// server's overall health); without one, client-side health checking is
// off. A malformed healthCheckConfig is an error.
func HealthCheckService(serviceConfig string) (service string, on bool, err error) {
	if serviceConfig == "" {
		return "", false, nil
	}
	var sc struct {
		HealthCheckConfig *json.RawMessage `json:"healthCheckConfig"`
	}
	if err := json.Unmarshal([]byte(serviceConfig), &sc); err != nil {
		return "", false, err
	}
	if sc.HealthCheckConfig == nil || string(*sc.HealthCheckConfig) == "null" {
		return "", false, nil
	}
	// Keys are matched exactly (encoding/json would take "servicename"):
	// a misspelt key would turn health checking off without a word.
	var hc map[string]json.RawMessage
	if err := json.Unmarshal(*sc.HealthCheckConfig, &hc); err != nil {
		return "", false, fmt.Errorf(`healthCheckConfig: want {"serviceName": "<name>"}: %v`, err)
	}
	for k := range hc {
		if k != "serviceName" {
			return "", false, fmt.Errorf(`healthCheckConfig: unknown field %q (want {"serviceName": "<name>"})`, k)
		}
	}
	raw, ok := hc["serviceName"]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &service); err != nil {
		return "", false, fmt.Errorf("healthCheckConfig.serviceName: not a string: %s", raw)
	}
	if err := checkHealthService("healthCheckConfig.serviceName", service); err != nil {
		return "", false, err
	}
	return service, true, nil
}

// Step is one entry of the timeline: an Action, applied at a fixed time or
// Delay after an event.
type Step struct {
	At     time.Duration // when After is nil: time since the scenario started
	After  *Cond         // when set: the step is triggered by this event
	Delay  time.Duration // with After: wait this long after the event
	Action Action
}

// Kind is the kind of the step's action.
func (s Step) Kind() StepKind {
	if s.Action == nil {
		return ""
	}
	return s.Action.Kind()
}

// StepKind names an action. It is also the action's key in the YAML form.
type StepKind string

// The step kinds.
const (
	StepResolve     StepKind = "resolve"        // ResolverUpdate
	StepFault       StepKind = "fault"          // SetFault
	StepClear       StepKind = "clear"          // ClearFault
	StepBackendDown StepKind = "backend_down"   // BackendDown
	StepBackendUp   StepKind = "backend_up"     // BackendUp
	StepRPC         StepKind = "rpc"            // StartRPC
	StepWait        StepKind = "wait"           // WaitFor
	StepFinish      StepKind = "finish"         // EndRun
	StepHealth      StepKind = "health"         // SetHealth
	StepResolverErr StepKind = "resolver_error" // ResolverError
	StepConfig      StepKind = "config"         // SetConfig
)

// Action is what a step does: one of ResolverUpdate, ResolverError,
// SetConfig, SetXDS, SetFault, ClearFault, SetHealth, BackendDown,
// BackendUp, StartRPC, WaitFor, EndRun. Runners switch on the concrete type
// (or on Kind).
type Action interface {
	Kind() StepKind
	isAction()
}

// ResolverUpdate pushes a list of endpoints to the client (A61: an endpoint
// is a list of addresses).
type ResolverUpdate struct {
	Endpoints []Endpoint
}

// Endpoint is one endpoint of a resolver update.
//
// Attrs are passed to the runner, which gives them to the implementation in
// its own form. The documented attribute is "path": A56's hierarchical path,
// child names outermost first, separated by "/" ("p0/locality1" routes the
// endpoint to priority child p0, then to its child locality1); the
// reference's form is reference.Endpoint.
type Endpoint struct {
	Addrs []Addr
	Attrs map[string]string // endpoint attributes, passed through to the runner
}

// ResolverError makes the resolver report an error instead of addresses.
type ResolverError struct {
	Err string
}

// SetConfig replaces the client's LB configuration during the run, as a
// new service config from the resolver does: the policy receives it with
// the last resolver update's addresses. Exactly one of LBPolicy and
// ServiceConfig is set, with the meaning they have in Client.
type SetConfig struct {
	LBPolicy      string // a policy name, as in Client.LBPolicy
	LBConfig      string // its config as JSON text (an object); empty means {}
	ServiceConfig string // a whole service config as JSON text
}

// Health statuses an address's health service can serve (A17); runners
// that work at the balancer API map them to READY and TRANSIENT_FAILURE.
const (
	Serving    = "SERVING"
	NotServing = "NOT_SERVING"
)

// SetHealth sets the health status one address's health service serves for
// one service name (A17: the health request's service; "" is the server's
// overall health). Each address of a backend serves its own statuses, and
// every (address, service) is SERVING until a health step sets it. A
// client watches a service's status only when its service config names the
// service in healthCheckConfig (HealthCheckService).
type SetHealth struct {
	Addr    Addr
	Service string // the health service name; "" the overall health
	Status  string // Serving or NotServing
}

// For returns h for the health service name service.
func (h SetHealth) For(service string) SetHealth {
	h.Service = service
	return h
}

// FaultType is a per-address fault (DESIGN.md, "Faults per address"): of
// the network, or of the backend's answers.
type FaultType string

// The faults.
const (
	Drop  FaultType = "drop"  // SYN dropped: connect hangs
	Reset FaultType = "reset" // SYN answered with a TCP reset
	Stall FaultType = "stall" // TCP accepted, HTTP/2 never answered
	Down  FaultType = "down"  // nothing listens on the address
	// FailRPCs: connections are accepted and served, but the backend
	// answers every RPC on the address (its health service aside) with
	// SetFault.Code, a failure after the pick that outlier detection counts.
	FailRPCs FaultType = "fail_rpcs"
)

// FaultTypes lists the faults, in the order errors name them.
func FaultTypes() []FaultType { return []FaultType{Drop, Reset, Stall, Down, FailRPCs} }

// DefaultFailCode is the status FailRPCs answers with when SetFault.Code is
// empty.
const DefaultFailCode = "UNAVAILABLE"

// SetFault applies a fault to one address, replacing any fault it had.
type SetFault struct {
	Addr  Addr
	Fault FaultType
	// Code is the status code name FailRPCs answers with (Codes, not OK);
	// empty means DefaultFailCode. Only FailRPCs has a code.
	Code string
}

// FailCode is the status code name the fault answers RPCs with: Code, or
// DefaultFailCode; "" for a fault other than FailRPCs.
func (f SetFault) FailCode() string {
	switch {
	case f.Fault != FailRPCs:
		return ""
	case f.Code == "":
		return DefaultFailCode
	}
	return f.Code
}

// ClearFault removes the fault on one address.
type ClearFault struct {
	Addr Addr
}

// BackendDown stops a backend: it no longer listens on any address.
type BackendDown struct {
	Backend string
}

// BackendUp starts a stopped backend again.
type BackendUp struct {
	Backend string
}

// StartRPC sends one unary RPC.
type StartRPC struct {
	ID           string        // unique within the scenario; events name it
	Deadline     time.Duration // zero: no deadline
	WaitForReady bool
	Metadata     map[string]string
}

// WaitFor requires an event: if Cond has not been met Timeout after the
// step was applied, the run ends with an error (the scenario could not set
// up what it meant to test).
type WaitFor struct {
	Cond    Cond
	Timeout time.Duration
}

// EndRun ends the run early, typically after an event ("end once r1 has a
// result"); Scenario.End remains the limit.
type EndRun struct{}

// Kind implements Action.
func (ResolverUpdate) Kind() StepKind { return StepResolve }

// Kind implements Action.
func (SetFault) Kind() StepKind { return StepFault }

// Kind implements Action.
func (ClearFault) Kind() StepKind { return StepClear }

// Kind implements Action.
func (BackendDown) Kind() StepKind { return StepBackendDown }

// Kind implements Action.
func (BackendUp) Kind() StepKind { return StepBackendUp }

// Kind implements Action.
func (StartRPC) Kind() StepKind { return StepRPC }

// Kind implements Action.
func (WaitFor) Kind() StepKind { return StepWait }

// Kind implements Action.
func (EndRun) Kind() StepKind { return StepFinish }

// Kind implements Action.
func (SetHealth) Kind() StepKind { return StepHealth }

// Kind implements Action.
func (ResolverError) Kind() StepKind { return StepResolverErr }

// Kind implements Action.
func (SetConfig) Kind() StepKind { return StepConfig }

func (ResolverUpdate) isAction() {}
func (SetFault) isAction()       {}
func (ClearFault) isAction()     {}
func (BackendDown) isAction()    {}
func (BackendUp) isAction()      {}
func (StartRPC) isAction()       {}
func (WaitFor) isAction()        {}
func (EndRun) isAction()         {}
func (SetHealth) isAction()      {}
func (ResolverError) isAction()  {}
func (SetConfig) isAction()      {}

// Cond matches trace events: the Count-th event (counting from the start of
// the run) of kind Kind whose set fields all equal the event's. Addr is
// symbolic and matches the event's concrete address for it.
type Cond struct {
	Kind  string // a trace kind, one of EventKinds
	State string // connectivity state (IDLE, CONNECTING, READY, TRANSIENT_FAILURE)
	Addr  Addr
	// Backend narrows to events of this backend, on any of its addresses:
	// a backend's connection may come on either family (Happy Eyeballs).
	Backend string
	RPC     string // a StartRPC's ID
	Code    string // gRPC status code name
	Timer   string // timer purpose
	Policy  string // policy path in the tree
	// XDS and Type narrow an xds-request: what it was (XDSRequestKinds:
	// request, ACK, NACK) and its resource type (LDS, RDS, CDS, EDS, or a
	// type URL).
	XDS   string
	Type  string
	Count int // zero means 1
}

// XDSRequestKinds lists what an xds-request may be (Cond.XDS), as
// harness/trace names them.
func XDSRequestKinds() []string { return []string{"request", "ACK", "NACK"} }

// XDSTypes lists the short names of the resource types (Cond.Type).
func XDSTypes() []string { return []string{"LDS", "RDS", "CDS", "EDS"} }

// N is the number of matching events the condition waits for.
func (c Cond) N() int {
	if c.Count <= 0 {
		return 1
	}
	return c.Count
}

// EventKinds lists the trace kinds a Cond may wait for. Each is a kind of
// harness/trace (a test there checks it).
func EventKinds() []string {
	return []string{
		"syn", "syn-ack", "rst",
		"accept", "preface", "rpc-served", "conn-close", "health-sent",
		"subchannel-new", "subchannel-connect", "subchannel-state",
		"subchannel-health", "subchannel-shutdown", "balancer-state",
		"subchannel-addresses", "exit-idle", "config-update",
		"pick", "resolve-now", "timer-start", "timer-fire", "timer-stop",
		"channel-state", "rpc-result", "xds-request",
	}
}

// States lists the connectivity states a Cond may name.
func States() []string {
	return []string{"IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN"}
}
