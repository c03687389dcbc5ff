// Package a56 is the suite for gRFC A56 (priority LB policy), as specs the Ginkgo suite
// and `conform run` both execute.
package a56

import (
	"github.com/conformlab/conform/suites/spec"
)

// Specs are the A56 specs, in document order.
func Specs() []spec.Spec {
	return nil
}
