package hierarchy

import (
	"reflect"
	"testing"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/resolver"
)

func ep(addr string, p ...string) resolver.Endpoint {
	return SetOnEndpoint(resolver.Endpoint{Addresses: []resolver.Address{{Addr: addr}}}, p)
}

// TestSplit_ByFirstElementStripped verifies A56, Hierarchical Addresses: the
// worked example (priority over weighted_target) splits by the first path
// element and strips it at each level.
func TestSplit_ByFirstElementStripped(t *testing.T) {
	s := resolver.State{
		Endpoints: []resolver.Endpoint{
			ep("10.0.0.1:80", "child0", "localityA"),
			ep("10.0.0.2:80", "child0", "localityB"),
			ep("10.0.0.3:80", "child1", "localityC"),
			ep("10.0.0.4:80", "child1", "localityD"),
			{Addresses: []resolver.Address{{Addr: "10.0.0.9:80"}}}, // no path: dropped
		},
		Attributes: attributes.New("k", "v"),
	}
	top := Split(s)
	got := map[string][]string{}
	for name, cs := range top {
		if cs.Attributes.Value("k") != "v" {
			t.Errorf("child %s lost the state's attributes", name)
		}
		for _, e := range cs.Endpoints {
			got[name] = append(got[name], e.Addresses[0].Addr+"="+FromEndpoint(e)[0])
		}
	}
	want := map[string][]string{
		"child0": {"10.0.0.1:80=localityA", "10.0.0.2:80=localityB"},
		"child1": {"10.0.0.3:80=localityC", "10.0.0.4:80=localityD"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("first level = %v, want %v", got, want)
	}
	second := Split(top["child0"])
	if len(second) != 2 || len(second["localityA"].Endpoints) != 1 {
		t.Fatalf("second level = %v", second)
	}
	if p := FromEndpoint(second["localityA"].Endpoints[0]); len(p) != 0 {
		t.Fatalf("leaf path = %v, want empty", p)
	}
	if p := FromEndpoint(s.Endpoints[0]); !reflect.DeepEqual(p, []string{"child0", "localityA"}) {
		t.Fatalf("Split modified its input: %v", p)
	}
}

// TestSplit_Addresses verifies the same rule for the flat address list.
func TestSplit_Addresses(t *testing.T) {
	s := resolver.State{Addresses: []resolver.Address{
		SetOnAddress(resolver.Address{Addr: "a:1"}, []string{"p0"}),
		SetOnAddress(resolver.Address{Addr: "b:1"}, []string{"p1", "x"}),
	}}
	m := Split(s)
	if len(m["p0"].Addresses) != 1 || m["p0"].Addresses[0].Addr != "a:1" || len(FromAddress(m["p0"].Addresses[0])) != 0 {
		t.Fatalf("p0 = %+v", m["p0"])
	}
	if p := FromAddress(m["p1"].Addresses[0]); !reflect.DeepEqual(p, []string{"x"}) {
		t.Fatalf("p1 path = %v", p)
	}
	if cs := ForChild(m, "p9", s); len(cs.Addresses) != 0 || len(cs.Endpoints) != 0 {
		t.Fatalf("absent child got %+v", cs)
	}
}

// TestPath_EqualAttributes verifies equal paths give equal attributes, which
// the channel relies on to tell whether an endpoint changed.
func TestPath_EqualAttributes(t *testing.T) {
	a, b := ep("x:1", "c", "d"), ep("x:1", "c", "d")
	if !a.Attributes.Equal(b.Attributes) {
		t.Fatal("equal paths give unequal attributes")
	}
	if a.Attributes.Equal(ep("x:1", "c").Attributes) {
		t.Fatal("different paths give equal attributes")
	}
}
