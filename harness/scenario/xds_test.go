package scenario

import (
	"errors"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario/xds"
)

// TestXDS_ClientAndStepProblems verifies the scenario's side of xDS names
// the field: the client's listener goes with the xds target and only with
// it, which names no policy of its own, and an xds step needs that target.
// The resources' own checks are harness/scenario/xds's.
func TestXDS_ClientAndStepProblems(t *testing.T) {
	cases := []struct {
		name  string
		b     *Builder
		field string
	}{
		{"xds without listener", New("v").Target(TargetXDS).End(time.Second), "client.listener"},
		{"listener without xds", New("v").End(time.Second), ""},
		{"xds with lb_policy", New("v").XDS("l").LB("p", "").End(time.Second), "client.lb_policy"},
		{"xds with service config", New("v").XDS("l").ServiceConfig(`{}`).End(time.Second), "client.service_config"},
		{"step without xds target", New("v").At(0, ServeXDS(xds.Resources{})).End(time.Second), "steps[0].xds"},
	}
	cases[1].b.s.Client.Listener, cases[1].field = "l", "client.listener"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.b.Build()
			var e *Error
			if !errors.As(err, &e) || e.Field != c.field {
				t.Fatalf("Build() error = %v, want an *Error on %s", err, c.field)
			}
		})
	}
}
