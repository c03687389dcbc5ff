package a56_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/suites/a56"
	"github.com/conformlab/conform/suites/spec"
)

func TestA56(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "A56: priority LB policy")
}

var _ = spec.Describe(requirement.A56, a56.Specs())
