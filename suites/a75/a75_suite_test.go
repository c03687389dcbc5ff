package a75_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/suites/a75"
	"github.com/conformlab/conform/suites/spec"
)

func TestA75(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "A75: xDS aggregate cluster behavior fixes")
}

var _ = spec.Describe(requirement.A75, a75.Specs())
