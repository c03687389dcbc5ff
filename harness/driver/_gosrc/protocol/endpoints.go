//go:build !conform_legacy

package protocol

import "google.golang.org/grpc/resolver"

// hasEndpoints: this grpc-go has resolver.State.Endpoints (v1.58 and later),
// so an endpoint with several addresses is expressed as it is.
const hasEndpoints = true

func resolverState(eps [][]string) resolver.State {
	var st resolver.State
	for _, ep := range eps {
		var e resolver.Endpoint
		for _, a := range ep {
			e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
		}
		st.Endpoints = append(st.Endpoints, e)
	}
	return st
}
