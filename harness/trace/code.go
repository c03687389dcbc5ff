package trace

import (
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"

	"github.com/conformlab/conform/harness/scenario"
)

// CodeName is how a trace spells a gRPC status code: the upper-case name of
// the status code documentation ("DEADLINE_EXCEEDED"), the same every
// language's driver can write and scenario conditions name.
func CodeName(c codes.Code) string {
	names := scenario.Codes() // in code order, OK = 0 … UNAUTHENTICATED = 16
	if int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// ParseCode is the code a trace's name stands for (CodeName's inverse, for
// the names scenario.Codes lists); ok is false for any other text.
func ParseCode(name string) (c codes.Code, ok bool) {
	i := slices.Index(scenario.Codes(), name)
	if i < 0 {
		return codes.Unknown, false
	}
	return codes.Code(i), true
}
