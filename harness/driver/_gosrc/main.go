// Command go is conform's driver for grpc-go: it speaks the driver protocol
// (harness/driver/PROTOCOL.md) on stdin and stdout and puts the grpc-go it
// was built against under test. conform builds it per grpc-go version;
// builds for grpc-go before v1.58 (no resolver endpoints) take the build tag
// conform_legacy.
package main

import (
	"os"

	"github.com/conformlab/conform/drivers/go/protocol"
)

func main() {
	s := protocol.NewSession(os.Stdout, protocol.Options{})
	os.Exit(s.Serve(os.Stdin))
}
