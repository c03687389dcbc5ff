package recorder

import (
	"errors"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/conformlab/conform/harness/trace"
)

// RPCIDKey is the outgoing metadata key whose value names an RPC in pick
// events (the scenario's RPC id). RPCs without it are recorded with no id.
const RPCIDKey = "x-conform-rpc"

// picker wraps the child's picker: it records every pick and hands the
// channel its own SubConn.
type picker struct {
	r *recorder
	p balancer.Picker
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	res, err := p.p.Pick(info)
	e := trace.Event{Kind: trace.KindPick, RPC: rpcID(info)}
	if err != nil {
		e.Err, e.Detail = err.Error(), pickErrorDetail(err)
		p.r.emit(e)
		return res, err
	}
	sc, ok := res.SubConn.(*subConn)
	if !ok {
		e.Err = errForeignSubConn.Error()
		p.r.emit(e)
		return res, nil
	}
	res.SubConn = sc.SubConn
	e.Subchannel = sc.id
	e.SessionAddrs = trace.SplitSessionAddrs(res.Metadata.Get(trace.SessionAddrsKey))
	if st := sc.connectivityState(); st != connectivity.Ready {
		e.State, e.Detail = st.String(), "not ready"
	} else {
		e.Addr = sc.readyAddr()
	}
	p.r.emit(e)
	return res, nil
}

// pickErrorDetail says what the channel does with a pick error, as far as
// the picker can tell (the simulator's words): ErrNoSubConnAvailable queues
// the RPC and a status error ends it ("dropped"); what another error does
// depends on the RPC's wait-for-ready, which a picker cannot see, so it is
// left unsaid.
func pickErrorDetail(err error) string {
	if errors.Is(err, balancer.ErrNoSubConnAvailable) {
		return "queued"
	}
	if _, ok := status.FromError(err); ok {
		return "dropped"
	}
	return ""
}

func rpcID(info balancer.PickInfo) string {
	if info.Ctx == nil {
		return ""
	}
	if v := metadata.ValueFromOutgoingContext(info.Ctx, RPCIDKey); len(v) > 0 {
		return v[0]
	}
	return ""
}
