package recorder

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/trace"
)

// The benchmarks compare a policy's pick and subchannel state change with
// and without the recorder around it, the recorder writing to Files in a
// temporary directory:
//
//	go test -run '^$' -bench . -benchmem ./harness/recorder
//
// The goal (issue 14): under 1 µs and no allocation per pick.

// benchCC is the channel's side: it keeps the listener and the picker.
type benchCC struct {
	balancer.ClientConn // nil: a method not overridden here panics
	listener            func(balancer.SubConnState)
	picker              balancer.Picker
}

func (c *benchCC) NewSubConn(_ []resolver.Address, o balancer.NewSubConnOptions) (balancer.SubConn, error) {
	c.listener = o.StateListener
	return &benchSC{}, nil
}

func (c *benchCC) UpdateState(s balancer.State) { c.picker = s.Picker }

type benchSC struct{ balancer.SubConn }

func (*benchSC) Connect() {}

// oneSC is the smallest policy: one subchannel, a picker of it once READY.
type oneSC struct {
	cc balancer.ClientConn
	sc balancer.SubConn
}

type oneSCBuilder struct{}

func (oneSCBuilder) Name() string { return "bench_one_subchannel" }

func (oneSCBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &oneSC{cc: cc}
}

func (b *oneSC) UpdateClientConnState(s balancer.ClientConnState) error {
	b.sc, _ = b.cc.NewSubConn(s.ResolverState.Addresses, balancer.NewSubConnOptions{StateListener: b.onState})
	b.sc.Connect()
	return nil
}

func (b *oneSC) onState(s balancer.SubConnState) {
	if s.ConnectivityState == connectivity.Ready {
		b.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Ready, Picker: fixedPicker{b.sc}})
	}
}

func (b *oneSC) ResolverError(error)                                        {}
func (b *oneSC) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (b *oneSC) ExitIdle()                                                  {}
func (b *oneSC) Close()                                                     {}

type fixedPicker struct{ sc balancer.SubConn }

func (p fixedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{SubConn: p.sc}, nil
}

// readyChannel is oneSC READY on one address, recorded into Files when rec
// is set; it returns the channel's side and the Files (nil without).
func readyChannel(b testing.TB, rec bool) (*benchCC, *Files) {
	var f *Files
	if rec {
		var err error
		if f, err = OpenFiles(FileOptions{Dir: b.TempDir()}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
	}
	return readyChannelInto(f), f
}

// readyChannelInto is oneSC READY, recorded into f unless it is nil.
func readyChannelInto(f *Files) *benchCC {
	cc := &benchCC{}
	var bb balancer.Builder = oneSCBuilder{}
	if f != nil {
		bb = New(bb, Options{Sink: f})
	}
	bal := bb.Build(cc, balancer.BuildOptions{})
	bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: resolver.State{Addresses: []resolver.Address{{Addr: "198.18.0.1:443"}}}})
	cc.listener(balancer.SubConnState{ConnectivityState: connectivity.Ready})
	return cc
}

// TestPick_RecordedWithoutAllocation verifies a recorded pick and a
// recorded subchannel state change allocate nothing, on the path where
// the event is queued (no writer runs, so only the channel's side is
// counted) and on the path where a full queue drops it.
func TestPick_RecordedWithoutAllocation(t *testing.T) {
	f, err := openFiles(FileOptions{Dir: t.TempDir(), Buffer: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { go f.run(); f.Close() }()
	cc := readyChannelInto(f)
	info := balancer.PickInfo{FullMethodName: "/svc/Method", Ctx: context.Background()}
	pick := func() { cc.picker.Pick(info) }
	state := func() { cc.listener(balancer.SubConnState{ConnectivityState: connectivity.Connecting}) }
	for _, c := range []struct {
		name string
		f    func()
	}{{"pick, queued", pick}, {"state change, queued", state}} {
		before := f.Dropped()
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", c.name, n)
		}
		if f.Dropped() != before {
			t.Fatalf("%s: events dropped: the queue path was not measured", c.name)
		}
	}
	for len(f.queue) < cap(f.queue) {
		pick()
	}
	if n := testing.AllocsPerRun(100, pick); n != 0 || f.Dropped() == 0 {
		t.Errorf("pick, dropped: %v allocations (%d dropped), want 0", n, f.Dropped())
	}
}

// The channels the benchmarks compare: the bare policy; the recorder
// writing into Files (its writer running, every WriteEvery); and the
// recorder queueing into Files whose queue the benchmark empties, with
// the timer stopped, whenever it is full — the cost of a recorded event
// that is kept, without the drops a saturating benchmark causes.
const (
	unwrapped = "unwrapped"
	recorded  = "recorded"
	queued    = "recorded-queue-only"
)

// benchChannel is the channel of kind, and a function that empties the
// queue when it is full (nil when nothing needs emptying).
func benchChannel(b *testing.B, kind string) (cc *benchCC, f *Files, drain func()) {
	switch kind {
	case unwrapped:
		cc, _ = readyChannel(b, false)
		return cc, nil, nil
	case recorded:
		cc, f = readyChannel(b, true)
		return cc, f, nil
	}
	f, err := openFiles(FileOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { go f.run(); f.Close() })
	drain = func() {
		if len(f.queue) < cap(f.queue)-1 {
			return
		}
		b.StopTimer()
		for len(f.queue) > 0 {
			<-f.queue
		}
		b.StartTimer()
	}
	return readyChannelInto(f), f, drain
}

func benchmarkPick(b *testing.B, kind string) {
	cc, f, drain := benchChannel(b, kind)
	info := balancer.PickInfo{FullMethodName: "/svc/Method", Ctx: context.Background()}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := cc.picker.Pick(info); err != nil {
			b.Fatal(err)
		}
		if drain != nil {
			drain()
		}
	}
	b.StopTimer()
	if f != nil {
		b.ReportMetric(float64(f.Dropped())/float64(b.N), "dropped/op")
	}
}

// BenchmarkPick: a pick of the bare policy, and through the recorder.
func BenchmarkPick(b *testing.B) {
	for _, kind := range []string{unwrapped, recorded, queued} {
		b.Run(kind, func(b *testing.B) { benchmarkPick(b, kind) })
	}
}

// BenchmarkPickParallel: picks from every core at once, as a busy client's
// RPCs make them, the recorder writing into Files.
func BenchmarkPickParallel(b *testing.B) {
	for _, kind := range []string{unwrapped, recorded} {
		b.Run(kind, func(b *testing.B) {
			cc, f, _ := benchChannel(b, kind)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				info := balancer.PickInfo{FullMethodName: "/svc/Method", Ctx: context.Background()}
				for pb.Next() {
					cc.picker.Pick(info)
				}
			})
			b.StopTimer()
			if f != nil {
				b.ReportMetric(float64(f.Dropped())/float64(b.N), "dropped/op")
			}
		})
	}
}

// BenchmarkSubConnState: a subchannel state change reaching the policy
// (CONNECTING and IDLE in turn, which oneSC only takes note of).
func BenchmarkSubConnState(b *testing.B) {
	for _, kind := range []string{unwrapped, recorded, queued} {
		b.Run(kind, func(b *testing.B) {
			cc, _, drain := benchChannel(b, kind)
			states := [2]balancer.SubConnState{{ConnectivityState: connectivity.Connecting}, {ConnectivityState: connectivity.Idle}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				cc.listener(states[i&1])
				if drain != nil {
					drain()
				}
			}
		})
	}
}

// BenchmarkFilesWrite: the writer's cost per event written to a file (with
// rotation at the default size): the rate the recorder sustains without
// dropping.
func BenchmarkFilesWrite(b *testing.B) {
	f, err := openFiles(FileOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	e := trace.Event{Source: trace.SourcePolicy, Kind: trace.KindPick, Subchannel: "sc1", Addr: "198.18.0.1:443"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e.T = time.Duration(i)
		f.writeLine(e)
		if i%64 == 63 {
			f.flush()
		}
	}
	b.StopTimer()
	f.flush()
	if f.err != nil {
		b.Fatal(f.err)
	}
	go f.run()
	f.Close()
}
