package scenario

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// Validate checks s and returns the first problem as an *Error naming the
// field by its path in the YAML form. Scenarios read from files get the same
// checks, with the file and line added.
func (s *Scenario) Validate() error {
	v := validator{s: s, rpcs: map[string]bool{}, checked: map[string]bool{}}
	for _, st := range s.Steps {
		if r, ok := st.Action.(StartRPC); ok {
			v.rpcs[r.ID] = true
		}
	}
	if err := v.top(); err != nil {
		return err
	}
	if err := v.steps(); err != nil {
		return err
	}
	return v.dnsSteps()
}

type validator struct {
	s       *Scenario
	rpcs    map[string]bool // RPC ids declared anywhere in the timeline
	checked map[string]bool // RPC ids met so far by the walk
}

func (v *validator) top() error {
	if err := checkName("name", v.s.Name); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, b := range v.s.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		if err := checkName(p+".name", b.Name); err != nil {
			return err
		}
		if seen[b.Name] {
			return form.FieldErr(p+".name", "backend %q is defined twice", b.Name)
		}
		seen[b.Name] = true
		if b.Stack.Families() == nil {
			return form.FieldErr(p+".stack", "unknown stack %q (want ipv4, ipv6 or dual)", b.Stack)
		}
	}
	if err := v.client(); err != nil {
		return err
	}
	if v.s.End <= 0 {
		return form.FieldErr("end", "must be a positive duration")
	}
	return nil
}

func (v *validator) client() error {
	c := v.s.Client
	if c.Target != "" && c.Target != TargetManual && c.Target != TargetDNS && c.Target != TargetXDS {
		return form.FieldErr("client.target", "unknown target form %q (want manual, dns or xds)", c.Target)
	}
	if c.IdleTimeout < 0 {
		return form.FieldErr("client.idle_timeout", "must not be negative (absent or zero: the client's default)")
	}
	if err := v.xdsClient(); err != nil {
		return err
	}
	if err := checkEnv(c.Env); err != nil {
		return err
	}
	return checkLB("client", c.LBPolicy, c.LBConfig, c.ServiceConfig)
}

// checkLB checks a policy, its config and a service config at the path p:
// at most one of policy and service config, a config only with a policy,
// and the JSON texts objects.
func checkLB(p, policy, config, serviceConfig string) error {
	if config != "" && policy == "" {
		return form.FieldErr(p+".lb_config", "set without lb_policy")
	}
	if policy != "" && serviceConfig != "" {
		return form.FieldErr(p+".service_config", "set together with lb_policy: use one")
	}
	if err := checkJSONObject(p+".lb_config", config); err != nil {
		return err
	}
	if err := checkJSONObject(p+".service_config", serviceConfig); err != nil {
		return err
	}
	if _, _, err := HealthCheckService(serviceConfig); err != nil {
		return form.FieldErr(p+".service_config", "%v", err)
	}
	return nil
}

// checkHealthService accepts a health service name: any text the health
// request can carry (A17 asks only for a JSON string; the request is
// protobuf, whose strings are UTF-8), without control characters, which no
// service name has.
func checkHealthService(field, name string) error {
	if !utf8.ValidString(name) {
		return form.FieldErr(field, "not valid UTF-8")
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		return form.FieldErr(field, "control character %q at byte %d: a service name is printable text", name[i], i)
	}
	return nil
}

// checkJSONObject accepts empty text or one JSON object.
func checkJSONObject(field, text string) error {
	if text == "" {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		return form.FieldErr(field, "not a JSON object: %v", err)
	}
	if obj == nil {
		return form.FieldErr(field, "not a JSON object: null")
	}
	return nil
}

func (v *validator) steps() error {
	last, lastIdx := time.Duration(0), -1
	for i, st := range v.s.Steps {
		p := fmt.Sprintf("steps[%d]", i)
		if err := v.trigger(p, st); err != nil {
			return err
		}
		if st.After == nil {
			if lastIdx >= 0 && st.At < last {
				return form.FieldErr(p+".at", "%v is before steps[%d].at (%v): times go backwards", st.At, lastIdx, last)
			}
			last, lastIdx = st.At, i
		}
		if st.Action == nil {
			return form.FieldErr(p, "no action")
		}
		if err := v.action(p+"."+string(st.Action.Kind()), st.Action); err != nil {
			return err
		}
	}
	return nil
}

func (v *validator) trigger(p string, st Step) error {
	if st.After == nil {
		if st.Delay != 0 {
			return form.FieldErr(p+".delay", "delay needs after")
		}
		if st.At < 0 {
			return form.FieldErr(p+".at", "negative time %v", st.At)
		}
		if st.At > v.s.End {
			return form.FieldErr(p+".at", "%v is after the end (%v)", st.At, v.s.End)
		}
		return nil
	}
	if st.At != 0 {
		return form.FieldErr(p+".at", "at and after are exclusive")
	}
	if st.Delay < 0 {
		return form.FieldErr(p+".delay", "negative delay %v", st.Delay)
	}
	return v.cond(p+".after", *st.After)
}

func (v *validator) cond(p string, c Cond) error {
	if !slices.Contains(EventKinds(), c.Kind) {
		return form.FieldErr(p+".kind", "unknown event kind %q", c.Kind)
	}
	if c.State != "" && !slices.Contains(States(), c.State) {
		return form.FieldErr(p+".state", "unknown state %q", c.State)
	}
	if c.Addr != "" {
		if err := v.addr(p+".addr", c.Addr); err != nil {
			return err
		}
	}
	if c.Backend != "" && !slices.ContainsFunc(v.s.Backends, func(b Backend) bool { return b.Name == c.Backend }) {
		return form.FieldErr(p+".backend", "backend %q is not defined", c.Backend)
	}
	if c.RPC != "" && !v.rpcs[c.RPC] {
		return form.FieldErr(p+".rpc", "rpc %q is not defined", c.RPC)
	}
	if c.Code != "" && !slices.Contains(Codes(), c.Code) {
		return form.FieldErr(p+".code", "unknown status code %q", c.Code)
	}
	if (c.XDS != "" || c.Type != "") && c.Kind != "xds-request" {
		f := p + ".xds"
		if c.XDS == "" {
			f = p + ".type"
		}
		return form.FieldErr(f, "only an xds-request has an xds kind and a resource type, not %s", c.Kind)
	}
	if c.XDS != "" && !slices.Contains(XDSRequestKinds(), c.XDS) {
		return form.FieldErr(p+".xds", "unknown xds request kind %q (want request, ACK or NACK)", c.XDS)
	}
	if c.Type != "" && !slices.Contains(XDSTypes(), c.Type) && !strings.HasPrefix(c.Type, "type.googleapis.com/") {
		return form.FieldErr(p+".type", "unknown resource type %q (want LDS, RDS, CDS, EDS or a type URL)", c.Type)
	}
	if c.Count < 0 {
		return form.FieldErr(p+".count", "negative count %d", c.Count)
	}
	return nil
}

func (v *validator) action(p string, a Action) error {
	switch a := a.(type) {
	case ResolverUpdate:
		return v.resolve(p, a)
	case SetFault:
		return v.fault(p, a)
	case ClearFault:
		return v.addr(p+".addr", a.Addr)
	case BackendDown:
		return v.backend(p+".backend", a.Backend)
	case BackendUp:
		return v.backend(p+".backend", a.Backend)
	case StartRPC:
		return v.rpc(p, a)
	case WaitFor:
		if a.Timeout <= 0 {
			return form.FieldErr(p+".timeout", "must be a positive duration")
		}
		return v.cond(p+".event", a.Cond)
	case EndRun:
		return nil
	case SetHealth:
		if a.Status != Serving && a.Status != NotServing {
			return form.FieldErr(p+".status", "unknown health status %q (want SERVING or NOT_SERVING)", a.Status)
		}
		if err := checkHealthService(p+".service", a.Service); err != nil {
			return err
		}
		return v.addr(p+".addr", a.Addr)
	case SetXDS:
		return v.xds(p, a)
	case ResolverError:
		if a.Err == "" {
			return form.FieldErr(p+".err", "must not be empty")
		}
		return nil
	case SetConfig:
		if a.LBPolicy == "" && a.ServiceConfig == "" && a.LBConfig == "" {
			return form.FieldErr(p, "needs lb_policy or service_config")
		}
		return checkLB(p, a.LBPolicy, a.LBConfig, a.ServiceConfig)
	}
	return form.FieldErr(p, "unknown action %T", a)
}

func (v *validator) fault(p string, f SetFault) error {
	if !slices.Contains(FaultTypes(), f.Fault) {
		return form.FieldErr(p+".type", "unknown fault %q (want drop, reset, stall, down or fail_rpcs)", f.Fault)
	}
	switch {
	case f.Code == "":
	case f.Fault != FailRPCs:
		return form.FieldErr(p+".code", "only fail_rpcs answers with a code, not %s", f.Fault)
	case f.Code == "OK":
		return form.FieldErr(p+".code", "OK is not a failure: want another status code")
	case !slices.Contains(Codes(), f.Code):
		return form.FieldErr(p+".code", "unknown status code %q", f.Code)
	}
	return v.addr(p+".addr", f.Addr)
}

func (v *validator) resolve(p string, u ResolverUpdate) error {
	for j, e := range u.Endpoints {
		ep := fmt.Sprintf("%s.endpoints[%d]", p, j)
		if len(e.Addrs) == 0 {
			return form.FieldErr(ep+".addrs", "an endpoint needs at least one address")
		}
		for k, a := range e.Addrs {
			if err := v.addr(fmt.Sprintf("%s.addrs[%d]", ep, k), a); err != nil {
				return err
			}
		}
		for k := range e.Attrs {
			if k == "" {
				return form.FieldErr(ep+".attrs", "empty attribute name")
			}
		}
	}
	return nil
}

func (v *validator) rpc(p string, r StartRPC) error {
	if err := checkName(p+".id", r.ID); err != nil {
		return err
	}
	if v.checked[r.ID] {
		return form.FieldErr(p+".id", "rpc %q is defined more than once", r.ID)
	}
	v.checked[r.ID] = true
	if r.Deadline < 0 {
		return form.FieldErr(p+".deadline", "negative deadline %v", r.Deadline)
	}
	for k := range r.Metadata {
		if !validMetadataKey(k) {
			return form.FieldErr(p+".metadata", "invalid metadata key %q (lower-case letters, digits, '-', '_', '.'; not -bin)", k)
		}
	}
	return nil
}

func (v *validator) addr(p string, a Addr) error {
	b, fam, ok := a.Split()
	if !ok {
		return form.FieldErr(p, "%q is not an address of the form backend/ipv4 or backend/ipv6", a)
	}
	i := v.s.BackendIndex(b)
	if i < 0 {
		return form.FieldErr(p, "backend %q is not defined", b)
	}
	if !v.s.Backends[i].Stack.Has(fam) {
		return form.FieldErr(p, "backend %q has no %s address (stack %s)", b, fam, v.s.Backends[i].Stack)
	}
	return nil
}

func (v *validator) backend(p, name string) error {
	if v.s.BackendIndex(name) < 0 {
		return form.FieldErr(p, "backend %q is not defined", name)
	}
	return nil
}

// checkName accepts names made of letters, digits, '-', '_' and '.', which
// are safe in file names, addresses and trace lanes.
func checkName(field, name string) error {
	if name == "" {
		return form.FieldErr(field, "must not be empty")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return form.FieldErr(field, "%q: only letters, digits, '-', '_' and '.' are allowed", name)
		}
	}
	return nil
}

func validMetadataKey(k string) bool {
	if k == "" || len(k) >= 4 && k[len(k)-4:] == "-bin" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Codes lists the gRPC status code names a Cond may name, as the gRPC
// status code documentation spells them.
func Codes() []string {
	return []string{
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
		"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
		"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
	}
}
