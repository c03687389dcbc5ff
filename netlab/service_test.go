package netlab

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestCheckLabNamespace_RefusesRootNamespace: the guard before any service
// address is added or removed rejects the namespace this test runs in (read
// only).
func TestCheckLabNamespace_RefusesRootNamespace(t *testing.T) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		t.Skipf("no netlink here: %v", err)
	}
	defer h.Close()
	if err := checkLabNamespace(h); err == nil {
		t.Fatal("checkLabNamespace accepted the test's own (root) namespace")
	} else {
		t.Logf("refused: %v", err)
	}
}

// TestAddServiceAddrs_AddsWithLocalRoutesAndRemoves verifies that the
// service addresses are on the host's lo, the IPv6 one with its local route,
// when AddServiceAddrs returns (the initial route dump has it), and gone
// after remove (twice is no error).
func TestAddServiceAddrs_AddsWithLocalRoutesAndRemoves(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}}})
	v4, v6 := netip.MustParseAddr("198.18.255.99"), netip.MustParseAddr("fd00:c0f::d:99")
	remove, err := AddServiceAddrs(l, "client0", v4, v6)
	if err != nil {
		t.Fatalf("AddServiceAddrs: %v", err)
	}
	if got := loAddrs(t, l); !slices.Contains(got, v4) || !slices.Contains(got, v6) {
		t.Errorf("lo has %v after AddServiceAddrs, want %s and %s", got, v4, v6)
	}
	must(t, l.Do("client0", func() error { return waitLocalRoutes([]netip.Addr{v6}, time.Second) }))
	for range 2 {
		if err := remove(); err != nil {
			t.Fatalf("remove: %v", err)
		}
	}
	if got := loAddrs(t, l); slices.Contains(got, v4) || slices.Contains(got, v6) {
		t.Errorf("lo has %v after remove", got)
	}
}

// loAddrs are the addresses on client0's lo.
func loAddrs(t *testing.T, l *Lab) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	must(t, l.Do("client0", func() error {
		h, lo, err := labLoopback()
		if err != nil {
			return err
		}
		defer h.Close()
		addrs, err := h.AddrList(lo, netlink.FAMILY_ALL)
		for _, a := range addrs {
			ip, _ := netip.AddrFromSlice(a.IP)
			out = append(out, ip.Unmap())
		}
		return err
	}))
	return out
}
