package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Dialer dials a network address (the lab's client namespace: netlab.Lab's
// DialContext).
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// lookupTimeout bounds each query, as ResolvConf's "timeout:1 attempts:1".
const lookupTimeout = time.Second

// Lookup asks the lab DNS, through dial, for name's A and then its AAAA
// records, one UDP query each, and returns the addresses: IPv4 first, then
// IPv6, each family in the order of the answer. It is the lookup of a
// client in conform's own process, which cannot use the system resolver
// (its sockets would be opened outside the lab). A name with neither kind of
// record is an error.
func Lookup(ctx context.Context, dial Dialer, name string) ([]netip.Addr, error) {
	v4, err4 := askLab(ctx, dial, name, dnsmessage.TypeA)
	v6, err6 := askLab(ctx, dial, name, dnsmessage.TypeAAAA)
	if err4 != nil && err6 != nil {
		return nil, errors.Join(err4, err6)
	}
	if out := append(v4, v6...); len(out) > 0 {
		return out, nil
	}
	return nil, fmt.Errorf("dns: %s has no A or AAAA record", name)
}

// askLab sends one question to the lab DNS over UDP and returns the
// addresses of the answer.
func askLab(ctx context.Context, dial Dialer, name string, typ dnsmessage.Type) ([]netip.Addr, error) {
	n, err := dnsmessage.NewName(name + ".")
	if err != nil {
		return nil, fmt.Errorf("dns: %q is not a name: %w", name, err)
	}
	id := uint16(time.Now().UnixNano())
	req, err := (&dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: n, Type: typ, Class: dnsmessage.ClassINET}},
	}).Pack()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	c, err := dial(ctx, "udp", netip.AddrPortFrom(ServiceAddrV4, Port).String())
	if err != nil {
		return nil, fmt.Errorf("dns: dialing the lab DNS: %w", err)
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	if _, err := c.Write(req); err != nil {
		return nil, fmt.Errorf("dns: asking %s %s: %w", name, typ, err)
	}
	buf := make([]byte, 64<<10)
	for {
		k, err := c.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("dns: %s %s: %w", name, typ, err)
		}
		var m dnsmessage.Message
		if m.Unpack(buf[:k]) != nil || m.Header.ID != id || !m.Header.Response {
			continue // not the answer to this query
		}
		return answerAddrsOf(m, name, typ)
	}
}

// answerAddrsOf reads the addresses of an answer of type typ.
func answerAddrsOf(m dnsmessage.Message, name string, typ dnsmessage.Type) ([]netip.Addr, error) {
	switch m.Header.RCode {
	case dnsmessage.RCodeSuccess:
	case dnsmessage.RCodeNameError:
		return nil, fmt.Errorf("dns: %s: no such name", name)
	default:
		return nil, fmt.Errorf("dns: %s %s: the server answered %v", name, typ, m.Header.RCode)
	}
	var out []netip.Addr
	for _, r := range m.Answers {
		switch b := r.Body.(type) {
		case *dnsmessage.AResource:
			if typ == dnsmessage.TypeA {
				out = append(out, netip.AddrFrom4(b.A))
			}
		case *dnsmessage.AAAAResource:
			if typ == dnsmessage.TypeAAAA {
				out = append(out, netip.AddrFrom16(b.AAAA))
			}
		}
	}
	return out, nil
}
