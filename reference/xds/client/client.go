// Package client is the reference's xDS client: one ADS stream (A27,
// "Transport Protocol"), state of the world, that watches one listener and
// everything it depends on, LDS → RDS → CDS → EDS (A27), aggregate clusters
// resolved per A37, and delivers each complete, validated configuration to
// a watcher.
//
// Every response is validated whole: a response with an invalid resource is
// NACKed with the reasons in error_detail and the resources of the previous
// accepted response of that type are kept (A27, "ACK/NACK"); a valid one is
// ACKed. Every request the client sends (subscription, ACK, NACK) is reported
// to Options.Observer, so that a harness can put the control-plane exchange
// in its trace.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
)

// Options configures a Client.
type Options struct {
	// Conn carries the ADS stream. The caller owns it. In the lab it is a
	// grpc.ClientConn dialed through the lab's dialer to an IP literal.
	Conn grpc.ClientConnInterface
	// NodeID is the node.id sent with every request.
	NodeID string
	// Listener is the LDS resource to watch.
	Listener string
	// AggregateClusterBackwardCompat is A75's temporary migration switch
	// (GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT=true): the clusters under
	// an aggregate cluster use the aggregate cluster's LB policy instead of
	// their own.
	AggregateClusterBackwardCompat bool
	// Observer, when set, is told of every request the client sends. It is
	// called on the client's goroutine and must not block.
	Observer func(RequestEvent)
	// StreamBackoff is the wait before the retries-th new stream after a
	// stream failed (retries counts from 0). Nil means 1 s × 2^retries,
	// capped at 30 s.
	StreamBackoff func(retries int) time.Duration
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

// RequestKind says why a request was sent.
type RequestKind string

// The request kinds.
const (
	// Subscribe: the set of resource names of a type changed, or a new
	// stream started.
	Subscribe RequestKind = "subscribe"
	// ACK accepts a response.
	ACK RequestKind = "ack"
	// NACK rejects a response; Detail says why.
	NACK RequestKind = "nack"
)

// RequestEvent is one DiscoveryRequest the client sent.
type RequestEvent struct {
	Kind    RequestKind
	TypeURL string
	Names   []string
	// Version is the request's version_info: the last accepted version of
	// the type (for a NACK, the one before the rejected response).
	Version string
	// Nonce is the response_nonce: the nonce of the response answered.
	Nonce string
	// Detail is the error_detail message of a NACK.
	Detail string
	// ResponseVersion is the version_info of the response answered by an
	// ACK or NACK.
	ResponseVersion string
}

// Watcher receives each complete configuration, or an error that leaves
// the listener without one (a resource that does not exist, a route the
// client cannot follow, an aggregate graph beyond the depth limit or with no
// leaf, or a stream failure before any configuration). It is called on the
// client's goroutine, one call at a time, and must not call Close.
type Watcher func(*Config, error)

// Client is one ADS stream watching one listener.
type Client struct {
	opts    Options
	watcher Watcher
	log     *slog.Logger
	cancel  context.CancelFunc
	ctx     context.Context
	done    chan struct{}
	once    sync.Once

	// Owned by the run goroutine.
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	// sendReq, when set, takes the requests instead of stream (Session).
	sendReq   func(*discoveryv3.DiscoveryRequest)
	types     map[string]*typeState
	delivered bool
}

// typeState is the client's state for one resource type.
type typeState struct {
	url       string
	fullState bool // LDS and CDS: a response lists every resource (A27)
	parse     func(*anypb.Any) (string, any, error)
	names     []string // subscribed, sorted
	version   string   // last accepted
	nonce     string   // last received
	res       map[string]any
	// unanswered holds names subscribed since the last accepted response:
	// their absence from a full-state response means nothing yet.
	unanswered map[string]bool
	accepted   bool
}

var typeOrder = []string{ListenerType, RouteConfigType, ClusterType, EndpointsType}

// New starts a client. Close stops it.
func New(opts Options, w Watcher) (*Client, error) {
	if opts.Conn == nil {
		return nil, errors.New("xds client: Options.Conn is nil")
	}
	c, err := newClient(opts, w)
	if err != nil {
		return nil, err
	}
	go c.run()
	return c, nil
}

// newClient is a client with no stream and no goroutine yet.
func newClient(opts Options, w Watcher) (*Client, error) {
	if opts.Listener == "" {
		return nil, errors.New("xds client: Options.Listener is empty")
	}
	if w == nil {
		return nil, errors.New("xds client: nil Watcher")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{opts: opts, watcher: w, log: log, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	c.types = map[string]*typeState{
		ListenerType: {url: ListenerType, fullState: true, parse: func(a *anypb.Any) (string, any, error) {
			n, v, err := parseListener(a)
			return n, v, err
		}},
		RouteConfigType: {url: RouteConfigType, parse: func(a *anypb.Any) (string, any, error) {
			n, v, err := parseRouteConfig(a)
			return n, v, err
		}},
		ClusterType: {url: ClusterType, fullState: true, parse: func(a *anypb.Any) (string, any, error) {
			n, v, err := parseCluster(a)
			return n, v, err
		}},
		EndpointsType: {url: EndpointsType, parse: func(a *anypb.Any) (string, any, error) {
			n, v, err := parseEndpoints(a)
			return n, v, err
		}},
	}
	for _, ts := range c.types {
		ts.res = map[string]any{}
		ts.unanswered = map[string]bool{}
	}
	lds := c.types[ListenerType]
	lds.names = []string{opts.Listener}
	lds.unanswered[opts.Listener] = true
	return c, nil
}

// Close ends the stream and waits for the client's goroutine to return.
func (c *Client) Close() {
	c.once.Do(c.cancel)
	<-c.done
}

func (c *Client) backoff(retries int) time.Duration {
	if c.opts.StreamBackoff != nil {
		return c.opts.StreamBackoff(retries)
	}
	d := time.Second << min(retries, 5)
	return min(d, 30*time.Second)
}

func (c *Client) run() {
	defer close(c.done)
	retries := 0
	for {
		gotResponse, err := c.runStream()
		if c.ctx.Err() != nil {
			return
		}
		c.log.Debug("ADS stream ended", "err", err)
		if gotResponse {
			retries = 0
		}
		// A27: resources already received stay in use across a stream
		// failure; the error matters only while there is no configuration.
		if !c.delivered {
			c.watcher(nil, fmt.Errorf("xds client: ADS stream: %v", err))
		}
		t := time.NewTimer(c.backoff(retries))
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		retries++
	}
}

// runStream runs one ADS stream until it fails.
func (c *Client) runStream() (gotResponse bool, err error) {
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(c.opts.Conn)
	st, err := ads.StreamAggregatedResources(c.ctx)
	if err != nil {
		return false, err
	}
	c.stream = st
	c.subscribeAll()
	for {
		resp, err := st.Recv()
		if err != nil {
			return gotResponse, err
		}
		gotResponse = true
		c.handle(resp)
	}
}

// subscribeAll sends what a new stream starts with: a subscription to
// every type with names, in the order LDS, RDS, CDS, EDS (A27).
func (c *Client) subscribeAll() {
	for _, url := range typeOrder {
		ts := c.types[url]
		ts.nonce = ""
		if len(ts.names) > 0 {
			c.send(ts, Subscribe, "", "")
		}
	}
}

func (c *Client) send(ts *typeState, kind RequestKind, detail, respVersion string) {
	req := &discoveryv3.DiscoveryRequest{
		VersionInfo:   ts.version,
		Node:          &corev3.Node{Id: c.opts.NodeID, UserAgentName: "conform-reference"},
		ResourceNames: slices.Clone(ts.names),
		TypeUrl:       ts.url,
		ResponseNonce: ts.nonce,
	}
	if kind == NACK {
		req.ErrorDetail = &status.Status{Code: int32(codes.InvalidArgument), Message: detail}
	}
	if c.opts.Observer != nil {
		c.opts.Observer(RequestEvent{Kind: kind, TypeURL: ts.url, Names: slices.Clone(ts.names), Version: ts.version,
			Nonce: ts.nonce, Detail: detail, ResponseVersion: respVersion})
	}
	if c.sendReq != nil {
		c.sendReq(req)
		return
	}
	if err := c.stream.Send(req); err != nil {
		c.log.Debug("ADS send failed", "type", ts.url, "err", err) // Recv reports the stream's end.
	}
}

// handle validates a response whole, ACKs or NACKs it, and on ACK updates
// the subscriptions and tells the watcher.
func (c *Client) handle(resp *discoveryv3.DiscoveryResponse) {
	ts, ok := c.types[resp.GetTypeUrl()]
	if !ok {
		c.log.Debug("ignoring response of unknown type", "type", resp.GetTypeUrl())
		return
	}
	ts.nonce = resp.GetNonce()
	parsed := map[string]any{}
	var errs []string
	for i, r := range resp.GetResources() {
		if r.GetTypeUrl() != ts.url {
			errs = append(errs, fmt.Sprintf("resources[%d] is %s, not %s", i, r.GetTypeUrl(), ts.url))
			continue
		}
		name, v, err := ts.parse(r)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %q: %v", shortType(ts.url), name, err))
			continue
		}
		parsed[name] = v
	}
	if len(errs) > 0 {
		// A27: a NACK names the last accepted version; the previous
		// resources stay in use.
		c.send(ts, NACK, strings.Join(errs, "; "), resp.GetVersionInfo())
		return
	}
	ts.version = resp.GetVersionInfo()
	ts.accepted = true
	if ts.fullState {
		ts.res = parsed
	} else {
		maps.Copy(ts.res, parsed)
	}
	clear(ts.unanswered)
	c.send(ts, ACK, "", resp.GetVersionInfo())
	c.refresh()
}

func shortType(url string) string {
	return url[strings.LastIndex(url, ".")+1:]
}

// refresh recomputes what the listener depends on, subscribes to it, and
// delivers the configuration when it is complete.
func (c *Client) refresh() {
	cfg, names, err := c.compute()
	// Names about to be subscribed are not yet answered: computed before
	// they are marked so, a full-state type would call them absent (A27: a
	// resource does not exist only when a response to its subscription
	// leaves it out). Each pass reaches further down an aggregate graph.
	for range 1 + MaxAggregateDepth*4 {
		if !c.markUnanswered(names) {
			break
		}
		cfg, names, err = c.compute()
	}
	c.subscribe(names)
	switch {
	case err != nil:
		c.watcher(nil, err)
	case cfg != nil:
		c.delivered = true
		c.watcher(cfg, nil)
	}
}

// markUnanswered marks the names not yet subscribed as unanswered and
// reports whether there were any.
func (c *Client) markUnanswered(names map[string][]string) (marked bool) {
	for _, url := range typeOrder {
		ts := c.types[url]
		for _, n := range names[url] {
			if !slices.Contains(ts.names, n) && !ts.unanswered[n] {
				ts.unanswered[n] = true
				marked = true
			}
		}
	}
	return marked
}

// subscribe makes the subscriptions names and sends the changed ones; it
// reports whether any changed.
func (c *Client) subscribe(names map[string][]string) (changed bool) {
	for _, url := range typeOrder {
		ts := c.types[url]
		want := names[url]
		slices.Sort(want)
		want = slices.Compact(want)
		if slices.Equal(want, ts.names) {
			continue
		}
		for _, n := range want {
			if !slices.Contains(ts.names, n) {
				ts.unanswered[n] = true
			}
		}
		ts.names = want
		// Resources no longer subscribed are forgotten.
		for n := range ts.res {
			if !slices.Contains(want, n) {
				delete(ts.res, n)
			}
		}
		c.send(ts, Subscribe, "", "")
		changed = true
	}
	return changed
}

// get returns a received resource of a type, ok false when it has not
// arrived, or ErrNotExist when a full-state response answering its
// subscription left it out.
func (c *Client) get(url, name string) (any, bool, error) {
	ts := c.types[url]
	if v, ok := ts.res[name]; ok {
		return v, true, nil
	}
	if ts.fullState && ts.accepted && !ts.unanswered[name] {
		return nil, false, fmt.Errorf("%s %q: %w", shortType(url), name, ErrNotExist)
	}
	return nil, false, nil
}

// compute walks LDS → RDS → CDS (A37 graph) → EDS from what has been
// received. It returns the names each type must be subscribed to, and the
// configuration when everything has arrived.
func (c *Client) compute() (*Config, map[string][]string, error) {
	names := map[string][]string{ListenerType: {c.opts.Listener}}
	v, ok, err := c.get(ListenerType, c.opts.Listener)
	if err != nil || !ok {
		return nil, names, err
	}
	l := v.(*Listener)
	rc := l.Inline
	if rc == nil {
		names[RouteConfigType] = []string{l.RouteConfigName}
		v, ok, err := c.get(RouteConfigType, l.RouteConfigName)
		if err != nil || !ok {
			return nil, names, err
		}
		rc = v.(*RouteConfig)
	}
	rt, err := routeCluster(rc, c.opts.Listener)
	if err != nil {
		return nil, names, err
	}
	root := rt.Cluster
	clusters := map[string]*Cluster{}
	leaves, reached, complete, err := walk(root, func(name string) (*Cluster, bool, error) {
		v, ok, err := c.get(ClusterType, name)
		if !ok {
			return nil, ok, err
		}
		cl := v.(*Cluster)
		clusters[name] = cl
		return cl, true, nil
	})
	names[ClusterType] = reached
	for _, leaf := range leaves {
		if cl := clusters[leaf]; cl.Kind == KindEDS {
			names[EndpointsType] = append(names[EndpointsType], cl.EDSServiceName)
		}
	}
	if err != nil || !complete {
		return nil, names, err
	}
	cfg := &Config{
		Listener:        c.opts.Listener,
		RouteConfigName: l.RouteConfigName,
		Cluster:         root,
		HashHeader:      rt.HashHeader,
		Leaves:          leaves,
		Clusters:        clusters,
		Endpoints:       map[string]*Endpoints{},
		LBPolicies:      map[string]json.RawMessage{},
	}
	for _, leaf := range leaves {
		cl := clusters[leaf]
		cfg.LBPolicies[leaf] = cl.LBPolicy
		if c.opts.AggregateClusterBackwardCompat && clusters[root].Kind == KindAggregate {
			// A75: the migration switch has the underlying clusters use
			// the aggregate cluster's LB policy.
			cfg.LBPolicies[leaf] = clusters[root].LBPolicy
		}
		if rt.HashHeader != "" {
			cfg.LBPolicies[leaf] = withRequestHashHeader(cfg.LBPolicies[leaf], rt.HashHeader)
		}
		if cl.Kind != KindEDS {
			continue
		}
		v, ok, err := c.get(EndpointsType, cl.EDSServiceName)
		if err != nil || !ok {
			return nil, names, err
		}
		cfg.Endpoints[cl.EDSServiceName] = v.(*Endpoints)
	}
	return cfg, names, nil
}
