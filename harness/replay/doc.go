// Package replay is the reverse step of the field-bug flow (DESIGN.md, "Reproduce
// a field bug"): from what a client recorded, Environment rebuilds a scenario whose
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
// between two observations; health-check states, except where the trace
// records them (conform's own traces have health-set events, replayed as
// health steps; a packet capture shows none); resolver errors (listed in
// the description, not replayed); RPC deadlines and metadata unless the
// trace has rpc-start events; and the client's configuration (its
// healthCheckConfig included), which the caller sets.
package replay
