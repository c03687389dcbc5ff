package scenario

import (
	"github.com/conformlab/conform/harness/scenario/internal/form"
	"github.com/conformlab/conform/harness/scenario/xds"
)

// The scenario's side of xDS: the target, the step and the client's
// fields. The resources an xds step sets are the xDS sub-language's
// (harness/scenario/xds), which reads, writes and checks them.

// TargetXDS: the client resolves "xds:///" + Client.Listener through the
// lab's xDS management server, whose resources follow the timeline's xds
// steps (SetXDS). Resolver updates feed the lab DNS, for LOGICAL_DNS
// clusters.
const TargetXDS = "xds"

// StepXDS sets the management server's resources (SetXDS).
const StepXDS StepKind = "xds"

// SetXDS has the xDS management server serve Resources from this step on,
// in place of the previous xds step's.
type SetXDS struct {
	Resources xds.Resources
}

// Kind implements Action.
func (SetXDS) Kind() StepKind { return StepXDS }

func (SetXDS) isAction() {}

// ServeXDS is an xds step: the management server serves x from then on.
func ServeXDS(x xds.Resources) SetXDS {
	return SetXDS{Resources: x}
}

// XDS makes the client's target "xds:///" + listener (TargetXDS).
func (b *Builder) XDS(listener string) *Builder {
	b.s.Client.Target, b.s.Client.Listener = TargetXDS, listener
	return b
}

// xdsClient checks the client's xDS fields: a listener with the xds target
// and only with it; the LB configuration comes from the resources, so the
// client sets none of its own.
func (v *validator) xdsClient() error {
	c := v.s.Client
	if c.Target != TargetXDS {
		if c.Listener != "" {
			return form.FieldErr("client.listener", "set without target xds")
		}
		return nil
	}
	if err := xds.CheckResourceName("client.listener", c.Listener); err != nil {
		return err
	}
	if c.LBPolicy != "" {
		return form.FieldErr("client.lb_policy", "set with target xds: the clusters name the policy")
	}
	if c.ServiceConfig != "" {
		return form.FieldErr("client.service_config", "set with target xds: the resources are the configuration")
	}
	return nil
}

// xds checks an xds step: the client must use the xds target; the
// resources check themselves, with the scenario checking their addresses.
func (v *validator) xds(p string, a SetXDS) error {
	if v.s.Client.Target != TargetXDS {
		return form.FieldErr(p, "an xds step needs client.target xds")
	}
	return a.Resources.Validate(p, v.addr)
}
