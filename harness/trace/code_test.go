package trace

import (
	"testing"

	"google.golang.org/grpc/codes"
)

// TestCodeName_SpellsEveryCodeAsTheStatusDocument verifies the mapping
// against grpc-go's own numbering.
func TestCodeName_SpellsEveryCodeAsTheStatusDocument(t *testing.T) {
	for c, want := range map[codes.Code]string{
		codes.OK: "OK", codes.Canceled: "CANCELLED", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
		codes.Unavailable: "UNAVAILABLE", codes.Unauthenticated: "UNAUTHENTICATED", codes.Code(42): "CODE_42",
	} {
		if got := CodeName(c); got != want {
			t.Errorf("CodeName(%v) = %q, want %q", c, got, want)
		}
	}
}

// TestParseCode_InvertsCodeName verifies every name of a code reads back as
// that code, and other text does not read at all.
func TestParseCode_InvertsCodeName(t *testing.T) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if got, ok := ParseCode(CodeName(c)); !ok || got != c {
			t.Errorf("ParseCode(%q) = %v, %v; want %v", CodeName(c), got, ok, c)
		}
	}
	for _, bad := range []string{"", "Unavailable", "CODE_42"} {
		if _, ok := ParseCode(bad); ok {
			t.Errorf("ParseCode(%q) is ok", bad)
		}
	}
}
