package a62_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/suites/a62"
	"github.com/conformlab/conform/suites/spec"
)

func TestA62(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "A62: pick_first: sticky TRANSIENT_FAILURE and address order randomization")
}

var _ = spec.Describe(requirement.A62, a62.Specs())
