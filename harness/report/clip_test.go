package report

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMatrixHeaders verifies the matrix's column headers: a name that
// fits is kept, a longer one clipped at its end, and two that would read
// the same keep their starts and ends in as many columns, so that a user's
// balancer's lab and simulator columns stay told apart.
func TestMatrixHeaders(t *testing.T) {
	m := Matrix{Impls: []Impl{{Name: "grpc-go@v1.85.0"}, {Name: "grpc-js@1.14.7-with-a-long-version"},
		{Name: "go:./examples/acme-pickfirst [pick_first=acme_pick_first]"}, {Name: "go:./examples/acme-pickfirst [pick_first=acme_pick_first] (sim)"}}}
	h := m.headers(18)
	if h[0] != "grpc-go@v1.85.0" || h[1] != "grpc-js@1.14.7-wi…" {
		t.Errorf("headers %q, %q; want the first as it is, the second clipped at its end", h[0], h[1])
	}
	lab, sim := h[2], h[3]
	if lab == sim || utf8.RuneCountInString(lab) != 18 || utf8.RuneCountInString(sim) != 18 || !strings.HasPrefix(sim, "go:./exa") || !strings.HasSuffix(sim, "(sim)") {
		t.Errorf("clipMiddle: %q and %q; want 18 columns each, told apart by their ends", lab, sim)
	}
}
