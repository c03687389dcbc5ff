//go:build conform_ringhash

package main

// grpc-go's ring_hash as a public package (v1.73 on, grpc-go PR 8249):
// imported, it registers ring_hash_experimental for service configs, with
// the requestHashHeader of gRFC A76, without the rest of xDS. Older
// grpc-go have ring_hash only inside the xds package (the conform_xds
// build).
import _ "google.golang.org/grpc/balancer/ringhash"
