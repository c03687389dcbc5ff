// Package a62 is the suite for gRFC A62 (pick_first: sticky TRANSIENT_FAILURE and address order randomization), as specs the Ginkgo suite
// and `conform run` both execute.
package a62

import (
	"github.com/conformlab/conform/suites/spec"
)

// Specs are the A62 specs, in document order.
func Specs() []spec.Spec {
	return nil
}
