package childconfig

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/serviceconfig"
)

const testName = "conform_test_childconfig"

type testConfig struct {
	serviceconfig.LoadBalancingConfig
	N int `json:"n"`
}

type testBuilder struct{}

func (testBuilder) Name() string                                                       { return testName }
func (testBuilder) Build(balancer.ClientConn, balancer.BuildOptions) balancer.Balancer { return nil }
func (testBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &testConfig{}
	return c, json.Unmarshal(js, c)
}

func init() { balancer.Register(testBuilder{}) }

func list(js string) []map[string]json.RawMessage {
	var l []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &l); err != nil {
		panic(err)
	}
	return l
}

// TestParse_FirstRegisteredPolicy verifies that unregistered policies are
// skipped, the first registered one is parsed by its parser and later ones
// are ignored.
func TestParse_FirstRegisteredPolicy(t *testing.T) {
	p, c, err := Parse("config", list(`[{"no_such_policy":{}},{"`+testName+`":{"n":3}},{"`+testName+`":{"n":4}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if p != testName || c.(*testConfig).N != 3 {
		t.Errorf("Parse = %q, %+v; want %q with n=3", p, c, testName)
	}
	if _, c, err := Parse("config", list(`[{"`+testName+`":null}]`)); err != nil || c.(*testConfig).N != 0 {
		t.Errorf("null config: %+v, %v; want {} parsed", c, err)
	}
}

// TestParse_Rejects verifies the errors, with the list's field name.
func TestParse_Rejects(t *testing.T) {
	for js, want := range map[string]string{
		`[{"a":{},"b":{}}]`:                "child_policy entry has 2 policies, want 1",
		`[{"no_such_policy":{}}]`:          "no registered policy among [no_such_policy]",
		`[{"` + testName + `":{"n":"x"}}]`: `policy "` + testName + `"`,
	} {
		if _, _, err := Parse("child_policy", list(js)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", js, err, want)
		}
	}
}
