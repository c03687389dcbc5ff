package pickfirst

import "google.golang.org/grpc/resolver"

// healthReportingKey is the resolver attribute that turns on generic health
// reporting. It is unexported so that only code that imports this package on
// purpose (a petiole policy) can set it, never a resolver or an application
// through configuration: A61, Generic Health Reporting Mechanism, wants the
// option reachable by parent policies only.
type healthReportingKey struct{}

// EnableHealthReporting returns state with generic health reporting turned
// on for the conform_pick_first instance that receives it. A petiole policy
// (round_robin, ring_hash, ...) calls it on the state it passes to each
// pick_first child.
//
// With health reporting on (A61, Generic Health Reporting Mechanism),
// connection management still follows each subchannel's raw connectivity
// state; once a subchannel is chosen, the policy watches its health
// (SubConn.RegisterHealthListener) and reports that to its parent instead of
// the raw READY.
func EnableHealthReporting(state resolver.State) resolver.State {
	state.Attributes = state.Attributes.WithValue(healthReportingKey{}, true)
	return state
}

func healthReportingEnabled(state resolver.State) bool {
	v, _ := state.Attributes.Value(healthReportingKey{}).(bool)
	return v
}
