// Package capture records TCP connection attempts on one interface of a
// network namespace, with the kernel's timestamps.
//
// # What it sees
//
// An AF_PACKET socket, opened inside the namespace and bound to one
// interface, receives every frame that interface sends or receives, and a
// classic BPF filter keeps only TCP segments with SYN or RST set, carried
// directly in IPv4 or IPv6. Each becomes a Packet: a client's SYN (and its
// retransmissions), the server's SYN-ACK, or an RST. Packets are folded into
// Attempts: one per SYN sequence from a client port to a server address,
// ending Established (SYN-ACK), Reset (RST from the server) or Unanswered
// (nothing by the AnswerDeadline or by Close).
//
// # Timebase
//
// Packet.Kernel is the kernel's SO_TIMESTAMPNS stamp, CLOCK_REALTIME, taken
// as the frame passed the interface: for an outgoing SYN, inside the
// connect(2) call. It carries no monotonic reading. User-space receive time
// is late by up to milliseconds under load; the kernel's is not. The lab
// converts these stamps to its monotonic timebase with an offset it samples
// between time.Now's wall and monotonic readings.
//
// # Limits
//
//   - Ethernet (and loopback) links only; no VLAN tags, no IPv6 extension
//     headers before TCP, no non-first IPv4 fragments.
//   - Frames the socket buffer cannot hold are dropped by the kernel, and
//     the capture does not report it; keep OnPacket fast.
//   - An attempt is named by its addresses and initial sequence number; an
//     answer is matched by addresses only.
//   - A realtime clock step (NTP) shifts stamps; the lab should not run one.
package capture
