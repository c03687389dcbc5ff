//go:build conform_legacy

package protocol

import (
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
)

// hasEndpoints: this grpc-go predates resolver.State.Endpoints (before
// v1.58); updates are flat address lists, and hello says "endpoints": false
// so that conform sends endpoints with several addresses only for
// pick_first, for which the flattened list means the same.
const hasEndpoints = false

func resolverState(eps [][]string) resolver.State {
	var st resolver.State
	for _, ep := range eps {
		for _, a := range ep {
			st.Addresses = append(st.Addresses, resolver.Address{Addr: a})
		}
	}
	return st
}

// EndpointFunc exists for the reference's driver only, which links a
// grpc-go with endpoints; this grpc-go has none to build.
type EndpointFunc func(addrs []string, attrs map[string]string) error

func attributedState([][]string, []map[string]string, EndpointFunc) (resolver.State, error) {
	return resolver.State{}, errors.New("this grpc-go has no endpoints to carry attributes")
}

// hasIdleTimeout: the legacy build leaves grpc.WithIdleTimeout out (it
// came in v1.56, inside the legacy range); hello says "idle_timeout": false.
const hasIdleTimeout = false

func idleTimeout(time.Duration) grpc.DialOption { return grpc.EmptyDialOption{} }
