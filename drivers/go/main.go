// Command go is conform's driver for grpc-go: it speaks the driver protocol
// (harness/driver/PROTOCOL.md) on stdin and stdout and puts the grpc-go it
// was built against under test. conform builds it per grpc-go version;
// builds for grpc-go before v1.58 (no resolver endpoints) take the build tag
// conform_legacy, and xDS-capable builds the build tag conform_xds (xds.go).
//
// Built with a user's balancer module (`conform verify --impl go:…`),
// conform adds a file that imports the module for its side effect (its
// policies' registration) and sets balancerModule; the policy mapping comes
// from the environment (protocol.PolicyMapEnv).
package main

import (
	"fmt"
	"os"

	"github.com/conformlab/conform/drivers/go/protocol"
)

// can is what this build adds to hello's capabilities (xds.go sets "xds").
var can = map[string]bool{}

// balancerModule is the import path of the user's balancer module this
// build links, or "" for a build of grpc-go alone.
var balancerModule string

func main() {
	opts := protocol.Options{Can: can}
	if balancerModule != "" {
		var err error
		opts, err = protocol.UserBalancer(opts, balancerModule, os.Getenv(protocol.PolicyMapEnv), os.Getenv(protocol.CanEnv))
		if err != nil {
			fmt.Fprintf(os.Stderr, "conform driver: %v\n", err)
			os.Exit(2)
		}
	}
	s := protocol.NewSession(os.Stdout, opts)
	os.Exit(s.Serve(os.Stdin))
}
