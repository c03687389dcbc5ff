// Package netlab is conform's network lab: real dual-stack gRPC backends in
// Linux network namespaces, per-address faults, and packet-level observation
// with kernel timestamps, all on one monotonic timebase.
//
// A lab is described first (Config) and then started (Start); Close removes
// everything it created. Every namespace is unnamed, so it vanishes with the
// process even after SIGKILL; nothing is ever created or changed in the root
// namespace. Addresses come from 198.18.0.0/15 and fd00:c0f::/48 and are
// derived from a host's index (see Addressing), so traces are stable.
//
//	switch ns:  br0 ── c0 ─┬─ client ns 0: eth0 198.18.0.1, fd00:c0f::c:1
//	                 ├── b0 ─┴─ backend ns "b1": eth0 198.19.0.1, fd00:c0f::b:1
//	                 └── b1 ─── backend ns "b2": eth0 198.19.0.2, fd00:c0f::b:2
//
// netlab knows nothing of load balancing: it reports network and backend
// events (SYNs and their fate, accepts, HTTP/2 prefaces, RPCs served, faults)
// and leaves their meaning to the harness.
//
// Namespace work always happens on a throwaway OS thread locked for the
// purpose (see Do); goroutines never inherit a namespace. Programs that hold
// a lab should lock their main goroutine to the main thread.
package netlab
