package trace

import (
	"time"

	"github.com/conformlab/conform/harness/scenario"
)

const ms = time.Millisecond

// sampleScenario is the A61 Happy Eyeballs setup the sample trace records.
func sampleScenario() *scenario.Scenario {
	return scenario.New("he-dropped-ipv6").
		Backend("b1", scenario.Dual).
		LB("conform_pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(100*ms, scenario.RPC("r1", scenario.WaitForReady())).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(30 * time.Second).
		MustBuild()
}

// sampleTrace is a plausible sim trace of sampleScenario touching most
// fields of Event, with strings that need escaping.
func sampleTrace() *Trace {
	h := NewHeader(sampleScenario(), "reference", ModeSim, 42)
	h.Harness = "v0.0.0-test"
	h.ImplVersion = "v0.1.0"
	h.Env = map[string]string{"go": "go1.26.8", "kernel": "6.1.0"}
	v6, v4 := "[fd00:c0f::1]:50051", "198.18.0.1:50051"
	return &Trace{Header: h, Events: []Event{
		{T: 0, Source: SourceHarness, Kind: KindFaultSet, Addr: v6, Fault: "drop"},
		{T: 0, Source: SourceHarness, Kind: KindResolverUpdate, Endpoints: [][]string{{v6, v4}}},
		{T: 0, Source: SourcePolicy, Kind: KindSubchannelNew, Subchannel: "sc1", Addrs: []string{v6}, Policy: "pick_first"},
		{T: 0, Source: SourcePolicy, Kind: KindSubchannelConnect, Subchannel: "sc1"},
		{T: 0, Source: SourcePolicy, Kind: KindTimerStart, Timer: "connection attempt delay", TimerID: 1, Duration: 250 * ms, Policy: "pick_first"},
		{T: 30 * time.Microsecond, Source: SourceCapture, Kind: KindSYN, Addr: v6, Port: 40001},
		{T: 100 * ms, Source: SourceHarness, Kind: KindRPCStart, RPC: "r1", WaitForReady: true},
		{T: 100 * ms, Source: SourcePolicy, Kind: KindPick, RPC: "r1", Err: "no ready subchannel: queued"},
		{T: 250 * ms, Source: SourcePolicy, Kind: KindTimerFire, Timer: "connection attempt delay", TimerID: 1, Policy: "pick_first"},
		{T: 250*ms + 900*time.Microsecond, Source: SourceCapture, Kind: KindSYN, Addr: v4, Port: 40002},
		{T: 251 * ms, Source: SourceCapture, Kind: KindSYNACK, Addr: v4, Port: 40002},
		{T: 251 * ms, Source: SourceBackend, Kind: KindAccept, Backend: "b1", Addr: v4, Peer: "198.18.0.200:40002"},
		{T: 252 * ms, Source: SourcePolicy, Kind: KindSubchannelState, Subchannel: "sc2", State: "READY"},
		{T: 252 * ms, Source: SourceDriver, Kind: KindChannelState, State: "READY"},
		{T: 253 * ms, Source: SourceBackend, Kind: KindRPCServed, Backend: "b1", Addr: v4, Method: "/conform.Echo/Name", RPC: "r1"},
		{T: 253 * ms, Source: SourceDriver, Kind: KindRPCResult, RPC: "r1", Backend: "b1", Code: "OK"},
		{T: 1030 * ms, Source: SourceCapture, Kind: KindSYN, Addr: v6, Port: 40001, Retransmit: true},
		{T: 1031 * ms, Source: SourceDriver, Kind: KindLog, Detail: "quote \" backslash \\ tab \t <html> & ünïcode"},
	}}
}
