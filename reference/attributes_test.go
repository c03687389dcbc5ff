package reference

import (
	"reflect"
	"testing"

	"github.com/conformlab/conform/reference/internal/hierarchy"
)

// TestEndpoint_PathBecomesHierarchy verifies that the "path" attribute
// becomes the hierarchical path the reference's priority splits by, and that
// addresses keep their order.
func TestEndpoint_PathBecomesHierarchy(t *testing.T) {
	e, err := Endpoint([]string{"198.18.0.1:443", "[fd00:c0f::1]:443"}, map[string]string{AttrPath: "p0/locality1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := hierarchy.FromEndpoint(e); !reflect.DeepEqual(got, []string{"p0", "locality1"}) {
		t.Errorf("path = %q, want [p0 locality1]", got)
	}
	if len(e.Addresses) != 2 || e.Addresses[0].Addr != "198.18.0.1:443" || e.Addresses[1].Addr != "[fd00:c0f::1]:443" {
		t.Errorf("addresses = %v", e.Addresses)
	}
	plain, err := Endpoint([]string{"198.18.0.1:443"}, nil)
	if err != nil || hierarchy.FromEndpoint(plain) != nil {
		t.Errorf("without attributes: path %q, err %v; want none", hierarchy.FromEndpoint(plain), err)
	}
}

// TestEndpoint_RejectsUnknownAndEmpty verifies that an attribute the
// reference does not know, or a path with an empty element, is an error.
func TestEndpoint_RejectsUnknownAndEmpty(t *testing.T) {
	for _, attrs := range []map[string]string{{"weight": "3"}, {AttrPath: "p0//l1"}, {AttrPath: ""}} {
		if _, err := Endpoint([]string{"198.18.0.1:443"}, attrs); err == nil {
			t.Errorf("%v: accepted", attrs)
		}
	}
}
