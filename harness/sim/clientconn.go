package sim

import (
	"fmt"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	estats "google.golang.org/grpc/experimental/stats"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/trace"
)

// clientConn is the balancer.ClientConn the policy is built with. grpc-go
// requires implementations to embed the interface; methods it does not
// override are never called by the policies this package runs.
type clientConn struct {
	balancer.ClientConn
	w *Channel
}

var (
	_ balancer.ClientConn = (*clientConn)(nil)
	_ clock.Provider      = (*clientConn)(nil)
)

// Clock hands seam-aware policies the Channel's virtual clock. In wall mode it
// returns nil, so clock.From gives the wall clock.
func (cc *clientConn) Clock() clock.Clock {
	if cc.w.virt == nil {
		return nil
	}
	return cc.w.virt
}

// NewSubConn creates an IDLE subchannel (recorded as subchannel-new).
func (cc *clientConn) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("sim: NewSubConn with no addresses")
	}
	w := cc.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, fmt.Errorf("sim: channel closed")
	}
	sc := &subConn{
		w:        w,
		id:       fmt.Sprintf("sc%d", len(w.subConns)+1),
		addrs:    addrStrings(addrs),
		listener: opts.StateListener,
		state:    connectivity.Idle,
	}
	w.subConns = append(w.subConns, sc)
	w.recordLocked(trace.Event{Kind: trace.KindSubchannelNew, Subchannel: sc.id, Addrs: sc.addrs})
	return sc, nil
}

// RemoveSubConn is the deprecated form of SubConn.Shutdown.
func (cc *clientConn) RemoveSubConn(sc balancer.SubConn) { sc.Shutdown() }

// UpdateAddresses is the deprecated form of SubConn.UpdateAddresses.
func (cc *clientConn) UpdateAddresses(sc balancer.SubConn, addrs []resolver.Address) {
	sc.UpdateAddresses(addrs)
}

// UpdateState installs the new picker (recorded as balancer-state) and
// re-picks every queued RPC with it.
func (cc *clientConn) UpdateState(s balancer.State) {
	w := cc.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.idle {
		return // the balancer closed at the idle timeout, reporting as it went
	}
	w.state, w.picker = s.ConnectivityState, s.Picker
	w.pickerGen++
	w.recordLocked(trace.Event{Kind: trace.KindBalancerState, State: s.ConnectivityState.String()})
	w.channelStateLocked(s.ConnectivityState)
	for _, r := range w.queued {
		w.enqueuePickLocked(r)
	}
}

// ResolveNow records and counts a re-resolution request.
func (cc *clientConn) ResolveNow(resolver.ResolveNowOptions) {
	cc.w.mu.Lock()
	defer cc.w.mu.Unlock()
	cc.w.resolveNowLocked("")
}

func (w *Channel) resolveNowLocked(subchannel string) {
	if w.closed {
		return
	}
	w.resolveNow++
	w.recordLocked(trace.Event{Kind: trace.KindResolveNow, Subchannel: subchannel})
}

// Target is the simulated channel's target.
func (cc *clientConn) Target() string { return "sim:///" + cc.w.builder }

// MetricsRecorder discards metrics.
func (cc *clientConn) MetricsRecorder() estats.MetricsRecorder { return noMetrics{} }

func addrStrings(addrs []resolver.Address) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.Addr
	}
	return out
}

// noMetrics is a MetricsRecorder that records nothing.
type noMetrics struct{ estats.MetricsRecorder }

func (noMetrics) RecordInt64Count(*estats.Int64CountHandle, int64, ...string)             {}
func (noMetrics) RecordFloat64Count(*estats.Float64CountHandle, float64, ...string)       {}
func (noMetrics) RecordInt64Histo(*estats.Int64HistoHandle, int64, ...string)             {}
func (noMetrics) RecordFloat64Histo(*estats.Float64HistoHandle, float64, ...string)       {}
func (noMetrics) RecordInt64Gauge(*estats.Int64GaugeHandle, int64, ...string)             {}
func (noMetrics) RecordInt64UpDownCount(*estats.Int64UpDownCountHandle, int64, ...string) {}
func (noMetrics) RegisterAsyncReporter(estats.AsyncMetricReporter, ...estats.AsyncMetric) func() {
	return func() {}
}
