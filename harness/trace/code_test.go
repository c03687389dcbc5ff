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
