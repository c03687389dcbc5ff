// Package recorder records what a load-balancing policy does inside a real
// grpc-go channel, in the simulator's vocabulary (harness/sim), so that a
// lab or field trace and a simulated trace compare lane by lane.
//
// # The recorder balancer
//
// Registered as conform_recorder, with the config
//
//	{"child": [{"pick_first": {}}], "sink": "name"}
//
// or built in Go with New, the recorder wraps any child policy. It hands the
// child a ClientConn of its own and records, as trace.Events of source
// "policy": subchannel-new (with the addresses), subchannel-connect,
// subchannel-addresses, subchannel-state, subchannel-health (when the child
// registers a health listener), subchannel-shutdown, balancer-state,
// resolve-now, pick (the subchannel and address picked, with the session
// address list an xds_override_host reported in the pick result's metadata
// under trace.SessionAddrsKey; "queued"; or the error), and timer-start, timer-fire and timer-stop of seam-aware children
// (those reading time through clock.From(cc)). The stimuli the policy
// receives are recorded as the simulator records them, with source
// "harness": resolver-update, resolver-error, exit-idle. Subchannels are
// named sc1, sc2, … in creation order, per recorder.
//
// T is the time since the recorder was built, on the children's clock: the
// channel's own if it carries one (clock.Provider, as the simulator's does;
// the recorder forwards it and observes its timers), else a wall clock with
// a clock.Observer, read monotonically. Options.Now, or a sink implementing
// Timebase, puts events on another timebase (a lab's).
//
// Events go to a Sink: given to New, or registered by name (RegisterSink)
// for the registered form. A sink is called inside the channel's callbacks
// and pickers, in time order, one call at a time; it must not block. Buffer
// is an in-memory sink with an optional limit (a ring of the most recent
// events) for production clients.
//
// # In production
//
// Record is the recorder for a grpc-go client in production: one dial
// option, and trace files (mode field) in a directory, rotated at
// FileOptions.MaxFileBytes, at most FileOptions.MaxFiles of them, each a
// trace on its own (header, then events, written a whole line at a time, so
// that a file a crash cut short is read up to its last whole line). The
// channel never waits for the disk: events go through a bounded queue to a
// writer goroutine, and what a full queue cannot take is dropped, counted
// (Files.Dropped) and noted in the trace. A busy client can keep only the
// picks that did not get a READY subchannel (FileOptions.Picks). See
// ExampleRecord. Its cost
// (go test -run '^$' -bench . -benchmem ./harness/recorder): a few hundred
// nanoseconds and no allocation per pick and per subchannel state change;
// the writer sustains a few hundred thousand events a second.
//
// What the balancer API hides, the recorder cannot record: the address a
// multi-address subchannel connected to (READY and picks name the address
// only for single-address subchannels), and what the channel did with a
// pick error other than ErrNoSubConnAvailable or a status error (it depends
// on the RPC's wait-for-ready, which pickers do not see). Picks name the RPC
// whose outgoing metadata carries RPCIDKey.
//
// Turning such a trace back into the environment the client saw is
// harness/replay's.
package recorder
