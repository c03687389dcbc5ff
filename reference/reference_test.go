package reference

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/grpc/balancer"
)

// TestNames_EveryMappedPolicyIsRegistered verifies that importing the package
// registers a reference policy for each standard name it maps.
func TestNames_EveryMappedPolicyIsRegistered(t *testing.T) {
	for std, ref := range names {
		if balancer.Get(ref) == nil {
			t.Errorf("%s maps to %s, which is not registered", std, ref)
		}
	}
}

// TestRewriteConfig_RenamesPoliciesAtAnyDepth verifies a priority config's
// children are rewritten along with the top level.
func TestRewriteConfig_RenamesPoliciesAtAnyDepth(t *testing.T) {
	in := `{"priority_experimental":{"children":{"p0":{"config":[{"pick_first":{"shuffleAddressList":true}}]}},"priorities":["p0"]}}`
	want := `{"conform_priority":{"children":{"p0":{"config":[{"conform_pick_first":{"shuffleAddressList":true}}]}},"priorities":["p0"]}}`
	got, err := RewriteConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	json.Unmarshal([]byte(got), &g)
	json.Unmarshal([]byte(want), &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("RewriteConfig:\n got %s\nwant %s", got, want)
	}
	if _, err := RewriteConfig("{"); err == nil {
		t.Error("RewriteConfig accepted malformed JSON")
	}
}
