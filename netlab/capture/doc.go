// Package capture records TCP connection attempts on one interface of a
// network namespace, with the kernel's timestamps.
//
// # What it sees
//
// An AF_PACKET socket, opened inside the namespace (on a throwaway locked
// thread) and bound to one interface, receives every frame that interface
// sends or receives; a classic BPF filter keeps only TCP segments with SYN
// or RST set, carried directly in IPv4 or IPv6. Each becomes a Packet: a
// client's SYN and its retransmissions, the server's SYN-ACK, or an RST
// (refusals and aborts alike). Packets are folded into Attempts, one per
// client port, server address and initial sequence number, ending
// Established (SYN-ACK from the server), Reset (RST from the server) or
// Unanswered (nothing by the AnswerDeadline, or by Close). A capture in a
// backend's namespace sees the same attempts from the other side.
//
// # Timebase
//
// Packet.Kernel is the kernel's SO_TIMESTAMPNS stamp on CLOCK_REALTIME,
// taken as the frame passes the interface: for an outgoing SYN, inside the
// connect(2) call (measured: p50 ≈ 7 µs, p99 ≈ 19 µs after a time.Now()
// read just before connect; see BenchmarkSYNTimestampMinusConnect). It
// carries no monotonic reading. User-space receive time is late by up to
// milliseconds under load; the kernel's is not. The lab converts the stamps
// to its monotonic timebase with an offset it samples.
//
// # Limits
//
//   - Ethernet (and loopback) links only; no VLAN tags, no IPv6 extension
//     headers before TCP, no non-first IPv4 fragments.
//   - A SYN is stamped when it leaves, which is after neighbour resolution:
//     the first SYN to an unresolved neighbour is stamped when ARP or ND
//     completes, and SYNs to different neighbours can leave out of dial
//     order. Static neighbour entries avoid both.
//   - Frames that do not fit the socket buffer (4 MiB) are dropped by the
//     kernel; Close then returns ErrDropped. Keep OnPacket fast.
//   - Answers are matched by addresses only; Retransmit and attempt
//     identity also use the SYN's initial sequence number.
//   - A step of the realtime clock shifts the stamps.
package capture
