// Package recorder records what a load-balancing policy does inside a real
// grpc-go channel, in the simulator's vocabulary (harness/sim), so that a
// lab or field trace and a simulated trace compare lane by lane; and it turns
// such a trace back into the environment the client saw (Environment).
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
// What the balancer API hides, the recorder cannot record: the address a
// multi-address subchannel connected to (READY and picks name the address
// only for single-address subchannels), and what the channel did with a
// pick error other than ErrNoSubConnAvailable or a status error (it depends
// on the RPC's wait-for-ready, which pickers do not see). Picks name the RPC
// whose outgoing metadata carries RPCIDKey.
//
// # Environment: from a trace back to a scenario
//
// Environment is the reverse step of the field-bug flow (DESIGN.md, "Reproduce
// a field bug"): from what a client recorded, it rebuilds a scenario whose
// replay puts the client in the same environment. It reads only what a
// recorder can see (policy events, resolver updates, RPC starts); fault
// events in the input are ignored on purpose. The rules:
//
//   - Addresses. Every distinct ip:port becomes a symbolic address. The
//     addresses of one endpoint of a resolver update belong to one backend,
//     one per family, in order: [v6, v4] is one dual-stack backend, and a
//     second address of a family starts a new backend. Addresses seen only
//     on subchannels get a backend each. Backends are b1, b2, … in order of
//     first appearance; the scenario's description lists the mapping, and
//     Environment returns it.
//   - Answered: a subchannel READY (on the address the event names, or its
//     only address) means no fault.
//   - Refused (reset): an attempt, CONNECTING to TRANSIENT_FAILURE, that
//     failed within Inference.RefusedWithin (1 s).
//   - Hung (drop): an attempt that failed later (the connect deadline), or
//     that the policy abandoned (shutdown, new addresses) after pending for
//     Inference.HungAfter (200 ms) or more. An attempt that became READY
//     after 1 s or more hung first and was answered by a SYN retransmission
//     (at 1 s, 3 s, 7 s, … after the first SYN): the drop ends between the
//     retransmission before and the one that got through.
//   - Lost (down): a READY subchannel that went IDLE lost its connection;
//     refusals that follow are the same down address.
//   - Changes: a fault is in place from 0 when it is the first behaviour
//     seen; a later change is placed midway between the last evidence of
//     the old behaviour and the first evidence of the new; a loss at the
//     moment it happened.
//   - Resolver updates are replayed at their times. RPCs come from
//     rpc-start events where present; else from the picks naming an RPC
//     (sent at its first pick; wait-for-ready when it was picked again after
//     an error that only wait-for-ready RPCs survive); else from anonymous
//     picks, counting the picks after a new picker that retry queued RPCs.
//
// What cannot be inferred: the fault of an address never tried; stall
// versus drop (both hang until the connect deadline: only a packet capture
// tells them apart); an address that is merely slow versus one that hung,
// below the thresholds; which address of a multi-address subchannel
// answered or failed (a failure is attributed to all of them, a READY that
// names no address to none); why a connection was lost (a server's GOAWAY
// looks like a backend going down); when exactly a fault began or ended
// between two observations; health-check states (the scenario has no
// health action yet); resolver errors (listed in the description, not
// replayed); RPC deadlines and metadata unless the trace has rpc-start
// events; and the client's configuration, which the caller sets.
package recorder
