//go:build !conform_legacy

package protocol

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
)

// hasEndpoints: this grpc-go has resolver.State.Endpoints (v1.58 and later),
// so an endpoint with several addresses is expressed as it is.
const hasEndpoints = true

// resolverState carries eps as Endpoints and, flattened in order, as
// Addresses too, as grpc-go's own DNS resolver does: from v1.58 to v1.63
// the channel's policies (pick_first, round_robin's base balancer) read
// Addresses only and take an update without them for "produced zero
// addresses"; later ones read Endpoints where they are set.
func resolverState(eps [][]string) resolver.State {
	var st resolver.State
	for _, ep := range eps {
		var e resolver.Endpoint
		for _, a := range ep {
			e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
		}
		st.Endpoints = append(st.Endpoints, e)
		st.Addresses = append(st.Addresses, e.Addresses...)
	}
	return st
}

// EndpointFunc builds an endpoint from its addresses and the scenario's
// endpoint attributes (Options.Endpoint).
type EndpointFunc func(addrs []string, attrs map[string]string) (resolver.Endpoint, error)

// attributedState is resolverState with endpoints built by endpoint, which
// gives meaning to their attributes.
func attributedState(eps [][]string, attrs []map[string]string, endpoint EndpointFunc) (resolver.State, error) {
	var st resolver.State
	for i, addrs := range eps {
		var a map[string]string
		if i < len(attrs) {
			a = attrs[i]
		}
		e, err := endpoint(addrs, a)
		if err != nil {
			return resolver.State{}, err
		}
		st.Endpoints = append(st.Endpoints, e)
	}
	return st, nil
}

// hasIdleTimeout: this grpc-go has grpc.WithIdleTimeout (v1.56 on).
const hasIdleTimeout = true

// idleTimeout is the channel's idle timeout: after d without RPCs the
// channel goes IDLE (A62's IDLE_TIMEOUT).
func idleTimeout(d time.Duration) grpc.DialOption { return grpc.WithIdleTimeout(d) }
