package a61_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/spec"
)

func TestA61(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "A61: IPv4 and IPv6 dualstack backends")
}

var _ = spec.Describe(requirement.A61, a61.Specs())
