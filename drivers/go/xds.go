//go:build conform_xds

package main

// An xDS-capable build: grpc-go's xds package registers the xds:/// resolver
// and the xDS balancers (cluster manager, priority, weighted target, ring
// hash, outlier detection, …). The channel created with target
// "xds:///<listener>" reads its bootstrap from the environment conform
// gives the driver (GRPC_XDS_BOOTSTRAP_CONFIG).
import _ "google.golang.org/grpc/xds"

func init() { can["xds"] = true }
