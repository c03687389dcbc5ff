package pcap

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// FuzzRead verifies Read never panics on any file, that every error is an
// *Error naming the file (and the packet, when one is being read), and
// that what it accepts is a trace's events: known kinds, in time order,
// never before zero.
func FuzzRead(f *testing.F) {
	for _, link := range []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2, layers.LinkTypeRaw} {
		b := fieldCapture(f, link)
		f.Add(b.pcap())
		f.Add(b.pcapng())
	}
	p := fieldCapture(f, layers.LinkTypeEthernet).pcap()
	f.Add(p[:len(p)/2])
	f.Add(gz(f, p))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read("fuzz.pcap", bytes.NewReader(data))
		if err != nil {
			checkError(t, err)
			return
		}
		var last int64
		for _, e := range c.Events {
			if !e.Kind.Known() || !e.Source.Known() || e.T < 0 || int64(e.T) < last {
				t.Fatalf("event %v: unknown kind or source, or out of time order", e)
			}
			last = int64(e.T)
		}
	})
}

func checkError(t *testing.T, err error) {
	var e *Error
	if !errors.As(err, &e) || e.File != "fuzz.pcap" || !strings.HasPrefix(err.Error(), "fuzz.pcap: ") {
		t.Fatalf("error %q (%T) does not name the file", err, err)
	}
	if e.Packet > 0 && !strings.Contains(err.Error(), "packet ") {
		t.Fatalf("error %q does not name its packet", err)
	}
	if e.Err == nil || e.Reason == "" {
		t.Fatalf("error %#v says neither what nor why", e)
	}
}
