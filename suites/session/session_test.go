package session

import (
	"os"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/scenario"
)

// a60Cluster is the cluster part of A60's example cookie (Include Cluster
// Name in the Cookie), "cluster:" prefix included.
const a60Cluster = "cluster:cloud-internal-istio:cloud_mp_635862331669_807571734533927564"

// TestCookieValue_DocumentExamples verifies the cookie value against the
// documents: A60's example, encoded; A55's single address; A61's address
// lists, the address used first. The expected values were encoded by
// coreutils' base64, not by this package.
func TestCookieValue_DocumentExamples(t *testing.T) {
	for _, c := range []struct {
		doc     string
		addrs   []string
		cluster string
		want    string
	}{
		// A60: "206.12.3.6:8080;cluster:cloud-internal-istio:cloud_mp_635862331669_807571734533927564", base64-encoded.
		{"A60, Include Cluster Name in the Cookie", []string{"206.12.3.6:8080"}, a60Cluster,
			"MjA2LjEyLjMuNjo4MDgwO2NsdXN0ZXI6Y2xvdWQtaW50ZXJuYWwtaXN0aW86Y2xvdWRfbXBfNjM1ODYyMzMxNjY5XzgwNzU3MTczNDUzMzkyNzU2NA=="},
		// A55: base64 of the address alone, "206.12.3.6:8080".
		{"A55, StatefulSessionFilter Processing", []string{"206.12.3.6:8080"}, "", "MjA2LjEyLjMuNjo4MDgw"},
		// A61: "[2001:db8::6]:8080,206.12.3.6:8080;cluster:…", the address used first at the head.
		{"A61, Changes to Stateful Session Affinity", []string{"[2001:db8::6]:8080", "206.12.3.6:8080"}, a60Cluster,
			"WzIwMDE6ZGI4Ojo2XTo4MDgwLDIwNi4xMi4zLjY6ODA4MDtjbHVzdGVyOmNsb3VkLWludGVybmFsLWlzdGlvOmNsb3VkX21wXzYzNTg2MjMzMTY2OV84MDc1NzE3MzQ1MzM5Mjc1NjQ="},
		// A61 without a cluster part: "206.12.3.6:8080,[2001:db8::6]:8080".
		{"A61, Changes to Stateful Session Affinity", []string{"206.12.3.6:8080", "[2001:db8::6]:8080"}, "",
			"MjA2LjEyLjMuNjo4MDgwLFsyMDAxOmRiODo6Nl06ODA4MA=="},
		// conform's stand-in: a session without a cookie.
		{"harness/driver/PROTOCOL.md, session_metadata", nil, "", ""},
	} {
		if got := CookieValue(c.addrs, c.cluster); got != c.want {
			t.Errorf("%s: CookieValue(%q, %q) = %s, want %s", c.doc, c.addrs, c.cluster, got, c.want)
		}
	}
}

// TestCookie_Metadata verifies that Cookie and WithoutCookie put the RPC
// in a session through Header: the cookie's value, or empty.
func TestCookie_Metadata(t *testing.T) {
	r := scenario.RPC("s1", Cookie("206.12.3.6:8080", "[2001:db8::6]:8080"))
	if v, ok := r.Metadata[Header]; !ok || v != "MjA2LjEyLjMuNjo4MDgwLFsyMDAxOmRiODo6Nl06ODA4MA==" {
		t.Errorf("Cookie: metadata %v", r.Metadata)
	}
	r = scenario.RPC("c1", WithoutCookie())
	if v, ok := r.Metadata[Header]; !ok || v != "" {
		t.Errorf("WithoutCookie: metadata %v, want %s present and empty", r.Metadata, Header)
	}
}

// TestHeader_DriverProtocol verifies that Header is the metadata key the
// driver protocol names for a session's cookie, which drivers and the
// reference read.
func TestHeader_DriverProtocol(t *testing.T) {
	doc, err := os.ReadFile("../../harness/driver/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "session_metadata") || !strings.Contains(string(doc), "`"+Header+"`") {
		t.Errorf("harness/driver/PROTOCOL.md does not name %s as session_metadata's key", Header)
	}
}
