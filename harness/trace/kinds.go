package trace

// allSources and allKinds are the closed sets a reader accepts, in the order
// of event.go. A test parses event.go and the JSON Schema and fails when a
// constant is missing from either: adding a Kind means adding it here and to
// traces/schema/trace-v1.schema.json.
var allSources = []Source{
	SourceCapture, SourceBackend, SourceDriver, SourceHarness, SourcePolicy, SourceControlPlane,
}

var allKinds = []Kind{
	KindSYN, KindSYNACK, KindRST,
	KindAccept, KindPreface, KindRPCServed, KindConnClose, KindHealthSent,
	KindResolverUpdate, KindFaultSet, KindFaultClear, KindBackendDown, KindBackendUp,
	KindRPCStart, KindResolverError, KindHealthSet, KindDNSQuery, KindExitIdle, KindConfigUpdate, KindNote, KindStall,
	KindSubchannelNew, KindSubchannelConnect, KindSubchannelAddrs, KindSubchannelState,
	KindSubchannelHealth, KindSubchannelShutdown, KindBalancerState, KindPick,
	KindResolveNow, KindTimerStart, KindTimerFire, KindTimerStop,
	KindXDSRequest,
	KindChannelState, KindRPCResult, KindLog,
}

var (
	knownSources = setOf(allSources)
	knownKinds   = setOf(allKinds)
)

func setOf[T comparable](xs []T) map[T]bool {
	m := make(map[T]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Sources lists every source a trace may name.
func Sources() []Source { return append([]Source(nil), allSources...) }

// Kinds lists every kind a trace may name.
func Kinds() []Kind { return append([]Kind(nil), allKinds...) }

// Known reports whether s is a source of this schema.
func (s Source) Known() bool { return knownSources[s] }

// Known reports whether k is a kind of this schema.
func (k Kind) Known() bool { return knownKinds[k] }
