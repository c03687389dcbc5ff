package reference

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/reference/internal/hierarchy"
)

// AttrPath is the scenario endpoint attribute that carries A56's
// hierarchical path (A56, Hierarchical Addresses): child names separated by
// "/", outermost first. "p0/locality1" sends the endpoint to priority child
// p0, which hands it, with "locality1" left as its path, to its own child
// locality1 (a weighted_target's target, say).
const AttrPath = "path"

// Endpoint is the resolver endpoint the reference receives for a scenario
// endpoint: its concrete addresses, in order, with its attributes turned
// into the reference's own (AttrPath becomes the hierarchy the reference's
// multi-child policies route by). An attribute the reference does not know,
// or a path with an empty element, is an error rather than a silent skip.
func Endpoint(addrs []string, attrs map[string]string) (resolver.Endpoint, error) {
	var e resolver.Endpoint
	for _, a := range addrs {
		e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
	}
	for k, v := range attrs {
		if k != AttrPath {
			return resolver.Endpoint{}, fmt.Errorf("reference: unknown endpoint attribute %q (known: %q)", k, AttrPath)
		}
		p := strings.Split(v, "/")
		for _, name := range p {
			if name == "" {
				return resolver.Endpoint{}, fmt.Errorf("reference: endpoint attribute %s=%q has an empty element", AttrPath, v)
			}
		}
		e = hierarchy.SetOnEndpoint(e, p)
	}
	return e, nil
}
