// Command go is conform's driver for grpc-go: it speaks the driver protocol
// (harness/driver/PROTOCOL.md) on stdin and stdout and puts the grpc-go it
// was built against under test. conform builds it per grpc-go version;
// builds for grpc-go before v1.58 (no resolver endpoints) take the build tag
// conform_legacy, and xDS-capable builds the build tag conform_xds (xds.go).
package main

import (
	"os"

	"github.com/conformlab/conform/drivers/go/protocol"
)

// can is what this build adds to hello's capabilities (xds.go sets "xds").
var can = map[string]bool{}

func main() {
	s := protocol.NewSession(os.Stdout, protocol.Options{Can: can})
	os.Exit(s.Serve(os.Stdin))
}
