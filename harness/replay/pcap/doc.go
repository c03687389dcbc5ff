// Package pcap reads a packet capture taken on a client's host — a
// tcpdump -w file, pcap or pcapng, gzip-compressed or not — into conform
// trace events, the first step of reproducing a field bug (DESIGN.md,
// "Reproduce a field bug"): capture → trace → scenario (harness/replay)
// → replay in the lab. It also writes pcapng (Writer), for the lab's
// export of its own captures.
//
// # Capturing on the client's host
//
// Run, as root, on the host of the client under suspicion, while the
// problem happens (50051 stands for the service's port), and stop it with
// Ctrl-C:
//
//	tcpdump -i any -s 0 --time-stamp-precision=nano -w client.pcap \
//	  'tcp[tcpflags] & (tcp-syn|tcp-rst) != 0 or (ip6 proto 6 and ip6[53] & 0x06 != 0) or port 53 or tcp port 50051'
//
// The filter keeps every TCP segment with SYN or RST set — connection
// attempts and their answers; the tcp[] form matches IPv4 only, so the
// ip6[53] form (the flags byte of a TCP header right after the IPv6
// header) adds IPv6 — plus DNS, plus everything to and from the service's
// port, which carries gRPC's HTTP/2 when the service is served in clear
// text (h2c). Leave out "or tcp port 50051" for a small file that shows
// only attempts and DNS; keep -s 0 with it, since a segment cut short by
// the snap length ends the decoding of its connection. -i any records
// every interface in Linux cooked capture (SLL2); naming the client's
// interface (-i eth0) records Ethernet. Either is read, as are raw IP and
// BSD loopback captures.
//
// # What the reader shows
//
// Events carry the sources and fields the lab gives the same kinds (see
// harness/runner's fromLab and traces/README.md), so a field trace and a
// lab trace compare lane by lane:
//
//   - capture syn, syn-ack, rst: every SYN a client sent (Addr the
//     destination, Port the client's port, Peer the client's ip:port,
//     Retransmit for a SYN repeating an unanswered SYN of the same
//     addresses and initial sequence number), every SYN-ACK and every RST
//     of a client's connection, with the server in Addr and the client in
//     Port and Peer. Attempts are folded by netlab/capture's Tracker, the
//     lab's own. An attempt the capture ends before answering has SYNs and
//     nothing after them in its addr lane, and is Unanswered in
//     Capture.Attempts.
//   - harness dns-query: a response to a client's query over UDP port 53,
//     at the response's time, Peer the client, Detail "TYPE name RCODE" as
//     the lab's DNS writes it, followed by the answer's A and AAAA
//     addresses in answer order, space-separated ("AAAA svc.example
//     NOERROR fd00:c0f::1 fd00:c0f::2"). A query the capture shows no
//     response to has "unanswered" in the place of the code, at the time
//     it was sent.
//   - backend preface: the client sent the HTTP/2 client preface on a
//     connection (Addr the server, Peer the client).
//   - backend rpc-served: the client sent an RPC's request (its HEADERS,
//     at the time they left; RPC, Method, Addr and Peer as for its
//     rpc-result), as a lab backend records each RPC it receives.
//   - driver rpc-result: an RPC (a request HEADERS; RPC r1, r2, … in the
//     order of the requests, Method its :path, Addr the server, Peer the
//     client) ended: Code from grpc-status in its trailers (or a
//     trailers-only response) and Err its grpc-message; without
//     grpc-status, gRPC's HTTP to gRPC status mapping of :status; from a
//     server's RST_STREAM, gRPC's mapping of its error code; from the
//     client's RST_STREAM, no code (the capture cannot tell a deadline
//     from a cancellation) and Err saying so.
//   - harness note: where decoding of a connection stopped, and why.
//
// Times are nanoseconds since the capture's earliest packet, or since the
// time Since gives. The client is the side that sends SYNs, unless Client
// names its addresses.
//
// # What it cannot show
//
//   - Which backend an address is (Backend is empty), which subchannel or
//     policy made an attempt, channel states, or when the application
//     started an RPC: only what crosses the wire.
//   - gRPC over TLS: the payload is encrypted; only attempts and DNS are
//     read. Likewise DNS over TCP or TLS.
//   - An RPC whose stream the capture missed part of: TCP payload is put
//     back in order (retransmissions passed on once, out-of-order segments
//     held until the hole fills), but a hole that never fills, a segment
//     cut by the snap length, or payload from a server whose SYN-ACK was
//     not captured ends decoding of that connection, with a note.
//   - IPv4 fragments; IPv6 fragments.
//   - With -i any, a packet that crosses two interfaces of the host
//     (bridges, containers) is seen on each; a SYN, SYN-ACK or RST seen
//     again on another interface within 100 ms is a copy and left out
//     (SLL2 and pcapng say which interface saw it; SLL, the older cooked
//     format, does not). An address the host translates (NAT) is a
//     second client: use Client.
//
// Errors name the file, the packet and, in a plain pcap file, its byte
// offset, and say what was expected: *Error wrapping ErrNotCapture,
// ErrTruncated, ErrMalformed, ErrLinkType or ErrNoTCP.
package pcap
