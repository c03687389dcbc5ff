package ringhash

import (
	"testing"

	"google.golang.org/grpc/connectivity"
)

// TestAggregate_A42Rules verifies A42, Aggregated Connectivity State: rules
// 1 to 6, in order.
func TestAggregate_A42Rules(t *testing.T) {
	const (
		I  = connectivity.Idle
		C  = connectivity.Connecting
		R  = connectivity.Ready
		TF = connectivity.TransientFailure
	)
	for _, c := range []struct {
		in   []connectivity.State
		want connectivity.State
	}{
		{[]connectivity.State{TF, TF, R}, R},     // 1
		{[]connectivity.State{TF, TF, C, I}, TF}, // 2
		{[]connectivity.State{TF, C, I}, C},      // 3
		{[]connectivity.State{I, C}, C},          // 3
		{[]connectivity.State{TF, I, I}, C},      // 4
		{[]connectivity.State{I, I}, I},          // 5
		{[]connectivity.State{TF}, TF},           // 6: one endpoint, failed
		{[]connectivity.State{TF, TF, TF}, TF},   // 2
	} {
		if got := aggregate(c.in); got != c.want {
			t.Errorf("aggregate(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
