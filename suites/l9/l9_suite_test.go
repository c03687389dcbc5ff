package l9_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/suites/l9"
	"github.com/conformlab/conform/suites/spec"
)

func TestL9(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "L9: resolver and balancer API (what a channel shows from outside)")
}

var _ = spec.Describe(requirement.L9, l9.Specs())
