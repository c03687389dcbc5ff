// Package drivers holds the sources of conform's drivers (harness/driver's
// PROTOCOL.md), embedded so that conform can build or install a driver from
// any working directory.
//
// drivers/go is built as a module of its own against the grpc-go version
// under test; its go.mod files are kept as go.mod.txt so that the tree stays
// part of this module (go:embed cannot reach into another module, and `go
// vet ./...` checks the driver with everything else). The build writes them
// back as go.mod in a scratch directory.
package drivers

import "embed"

// Go is drivers/go: the Go driver and its reference variant.
//
//go:embed all:go
var Go embed.FS

// Node is drivers/node: the grpc-js driver and its install script.
//
//go:embed node/driver.js node/install.sh node/package.json
var Node embed.FS
