package runner

import (
	"fmt"
	"slices"
	"strconv"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/xdsres"
	"github.com/conformlab/conform/netlab/xdsserver"
	"github.com/conformlab/conform/reference"
	"github.com/conformlab/conform/reference/xds/client"
)

// simADS is the simulator's xDS exchange: the reference client's protocol
// (client.Session, the same code as on a real stream) against a model of the
// lab's management server (netlab/xdsserver over go-control-plane's snapshot
// cache in non-ADS mode, state of the world), carried synchronously with no
// latency, so that it is deterministic.
//
// The model follows go-control-plane v0.14's sotw ADS handler and snapshot
// cache as the lab server configures them:
//   - a request is recorded first (xdsserver's OnStreamRequest); one whose
//     nonce is not the type's latest response's is then ignored (stale);
//   - a NACK is taken as the client holding the version it rejected
//     (xdsserver's rule), so the server waits for a new version;
//   - a request answers at once when its version differs from the type's,
//     or when it names a resource the server has and has not returned on
//     this stream; otherwise it becomes the type's open watch;
//   - a changed type answers its open watch when the versions differ;
//   - a response carries the named resources (every one when none is named),
//     in the model's order, and the stream's next nonce ("1", "2", …).
//
// Where the lab's order is a race (responses to several types after one
// step: go-control-plane walks a map), the model takes LDS, RDS, CDS, EDS.
type simADS struct {
	sess    *client.Session
	state   map[string]*simType // per type URL
	nonce   int
	sent    map[string]string // nonce → version sent with it
	queue   []simMsg
	record  func(trace.Event)
	changed bool // a configuration or error was delivered since the last take
	cfg     *client.Config
	cfgErr  error
}

// simType is the server's state of one type and the stream's watch of it.
type simType struct {
	version   string
	resources []types.Resource // in the model's order
	set       bool

	sub      []string        // the subscribed names
	subbed   bool            // a request has been taken
	returned map[string]bool // names returned on the stream
	nonce    string          // the latest response's nonce; "" after a request
	open     bool            // an open watch
	watchVer string          // the open watch's request version
}

// simMsg is a message in flight: a request to the server or a response to
// the client.
type simMsg struct {
	req  *discovery.DiscoveryRequest
	resp *discovery.DiscoveryResponse
}

var simTypeOrder = []string{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType}

// newSimADS starts the client's stream: its first subscription is recorded.
// The client takes its options of env as the lab's resolver does.
func newSimADS(listener string, env reference.Switches, record func(trace.Event)) (*simADS, error) {
	sess, err := client.NewSession(client.Options{
		NodeID: xdsNode, Listener: listener,
		AggregateClusterBackwardCompat: env.AggregateClusterBackwardCompat,
	})
	if err != nil {
		return nil, err
	}
	a := &simADS{sess: sess, state: map[string]*simType{}, sent: map[string]string{}, record: record}
	for _, url := range simTypeOrder {
		a.state[url] = &simType{returned: map[string]bool{}}
	}
	a.client(sess.Start())
	a.run()
	return a, nil
}

// setResources is an xds step: the server's state of the world changes as
// xdsserver.SetResources changes it, and the exchange runs until it is
// quiet.
func (a *simADS) setResources(version string, res map[resource.Type][]types.Resource) {
	var changed []string
	for _, url := range simTypeOrder {
		rs, ok := res[url]
		if !ok {
			continue
		}
		st := a.state[url]
		if st.set && sameList(st.resources, rs) {
			continue
		}
		st.version, st.resources, st.set = version, slices.Clone(rs), true
		changed = append(changed, url)
	}
	for _, url := range changed {
		st := a.state[url]
		if st.open && st.watchVer != st.version {
			a.respond(url)
		}
	}
	a.run()
}

// take returns the configuration (or error) delivered since the last take;
// ok is false when nothing was.
func (a *simADS) take() (cfg *client.Config, err error, ok bool) {
	if !a.changed {
		return nil, nil, false
	}
	a.changed = false
	return a.cfg, a.cfgErr, true
}

func (a *simADS) client(r client.Result) {
	for _, q := range r.Requests {
		a.queue = append(a.queue, simMsg{req: q})
	}
	if r.Delivered {
		a.changed = true
		if r.Err != nil && r.Config == nil {
			a.cfgErr = r.Err
		} else {
			a.cfg, a.cfgErr = r.Config, nil
		}
	}
}

// run delivers the messages in flight, in order, until there are none.
func (a *simADS) run() {
	for len(a.queue) > 0 {
		m := a.queue[0]
		a.queue = a.queue[1:]
		if m.resp != nil {
			a.client(a.sess.Handle(m.resp))
			continue
		}
		a.serve(m.req)
	}
}

// serve is the server taking one request.
func (a *simADS) serve(req *discovery.DiscoveryRequest) {
	url := req.GetTypeUrl()
	e := xdsserver.Event{
		Node:    req.GetNode().GetId(),
		TypeURL: url,
		Kind:    xdsserver.Classify(req),
		Version: req.GetVersionInfo(),
		Nonce:   req.GetResponseNonce(),
		Names:   slices.Clone(req.GetResourceNames()),
	}
	if d := req.GetErrorDetail(); d != nil {
		e.ErrorCode, e.ErrorDetail = d.GetCode(), d.GetMessage()
	}
	e.RespondedVersion = a.sent[e.Nonce]
	if te, ok := xdsres.TraceEvent(e); ok {
		a.record(te)
	}
	st, ok := a.state[url]
	if !ok {
		return
	}
	if st.nonce != "" && e.Nonce != st.nonce {
		return // stale: the client has not seen the latest response
	}
	version := e.Version
	if e.Kind == xdsserver.NACK && e.RespondedVersion != "" {
		version = e.RespondedVersion
	}
	st.sub, st.subbed, st.nonce = slices.Clone(e.Names), true, ""
	st.open, st.watchVer = false, version
	if !st.set {
		st.open = true
		return
	}
	if version == st.version && !a.unreturned(st) {
		st.open = true
		return
	}
	a.respond(url)
}

// unreturned reports whether the subscription names a resource the server
// has and has not returned on the stream.
func (a *simADS) unreturned(st *simType) bool {
	have := map[string]bool{}
	for _, r := range st.resources {
		have[cache.GetResourceName(r)] = true
	}
	if len(st.sub) == 0 {
		for n := range have {
			if !st.returned[n] {
				return true
			}
		}
		return false
	}
	for _, n := range st.sub {
		if have[n] && !st.returned[n] {
			return true
		}
	}
	return false
}

// respond sends the type's resources the subscription names.
func (a *simADS) respond(url string) {
	st := a.state[url]
	a.nonce++
	nonce := strconv.Itoa(a.nonce)
	resp := &discovery.DiscoveryResponse{TypeUrl: url, VersionInfo: st.version, Nonce: nonce}
	returned := map[string]bool{}
	for _, r := range st.resources {
		n := cache.GetResourceName(r)
		if len(st.sub) > 0 && !slices.Contains(st.sub, n) {
			continue
		}
		msg, err := anypb.New(r)
		if err != nil {
			panic(fmt.Sprintf("runner: marshal %s %q: %v", url, n, err)) // xdsres built it
		}
		resp.Resources = append(resp.Resources, msg)
		returned[n] = true
	}
	st.returned = returned
	st.nonce, st.open = nonce, false
	a.sent[nonce] = st.version
	a.queue = append(a.queue, simMsg{resp: resp})
}

// sameList is xdsserver's rule for an unchanged type: the same names with
// proto.Equal contents.
func sameList(cur, rs []types.Resource) bool {
	if len(cur) != len(rs) {
		return false
	}
	byName := map[string]types.Resource{}
	for _, r := range cur {
		byName[cache.GetResourceName(r)] = r
	}
	for _, r := range rs {
		old, ok := byName[cache.GetResourceName(r)]
		if !ok || !proto.Equal(old, r) {
			return false
		}
	}
	return true
}
