package protocol

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	// Client-side health checking (A17): grpc-go runs it only when this
	// package is linked in and the service config has a healthCheckConfig.
	_ "google.golang.org/grpc/health"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"
)

// backendHeader names the lab backend that answered.
const backendHeader = "x-conform-backend"

// channel is the one channel of a session.
type channel struct {
	cc     *grpc.ClientConn
	res    *manual.Resolver // nil unless the target is conform:///
	mu     sync.Mutex
	rcc    resolver.ClientConn        // what res was built with
	last   resolver.State             // the last resolve command's state
	sc     *serviceconfig.ParseResult // the last config command's; nil: none
	rpcKey string                     // metadata key for the rpc id; "" for none
	emit   func(map[string]any)
	ctx    context.Context // cancelled on close: ends the RPCs
	cancel context.CancelFunc
	wg     sync.WaitGroup // the state watcher and the RPCs
}

// newChannel dials target and starts watching its state. A conform:///
// target gets a manual resolver fed only by resolve commands; others go to
// grpc-go as they are.
// A positive idle is the channel's idle timeout.
func newChannel(target, serviceConfig string, idle time.Duration, rpcKey string, emit func(map[string]any)) (*channel, error) {
	ch := &channel{emit: emit, rpcKey: rpcKey}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if strings.HasPrefix(target, "conform:") {
		ch.res = manual.NewBuilderWithScheme("conform")
		ch.res.ResolveNowCallback = func(resolver.ResolveNowOptions) { emit(map[string]any{"ev": "resolve-now"}) }
		ch.res.BuildCallback = func(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) {
			ch.mu.Lock()
			ch.rcc = cc
			ch.mu.Unlock()
		}
		opts = append(opts, grpc.WithResolvers(ch.res))
	}
	if serviceConfig != "" {
		opts = append(opts, grpc.WithDefaultServiceConfig(serviceConfig))
	}
	if idle > 0 {
		opts = append(opts, idleTimeout(idle))
	}
	// Dial (not NewClient, which older grpc-go lacks) builds the resolver at
	// once, so resolve commands can follow; Connect leaves IDLE.
	cc, err := grpc.Dial(target, opts...)
	if err != nil {
		return nil, err
	}
	ch.cc = cc
	ch.ctx, ch.cancel = context.WithCancel(context.Background())
	cc.Connect()
	first := cc.GetState() // reported before create's reply
	emit(map[string]any{"ev": "channel-state", "state": first.String()})
	ch.wg.Add(1)
	go ch.watchStates(first)
	return ch, nil
}

// watchStates reports every change of the channel's state after last that
// grpc-go's watch API shows, until SHUTDOWN.
func (ch *channel) watchStates(last connectivity.State) {
	defer ch.wg.Done()
	for last != connectivity.Shutdown && ch.cc.WaitForStateChange(context.Background(), last) {
		last = ch.cc.GetState()
		ch.emit(map[string]any{"ev": "channel-state", "state": last.String()})
	}
}

func (ch *channel) resolve(eps [][]string, attrs []map[string]string, endpoint EndpointFunc) error {
	if ch.res == nil {
		return fmt.Errorf("the channel's target is not conform:///; it has no resolver to push to")
	}
	// Without endpoints (hasEndpoints false), resolverState flattens them:
	// conform sends such updates only for pick_first, which flattens the
	// list itself (PROTOCOL.md, resolve).
	if hasAttributes(attrs) {
		if endpoint == nil {
			return fmt.Errorf("this driver cannot express endpoint attributes")
		}
		st, err := attributedState(eps, attrs, endpoint)
		if err != nil {
			return err
		}
		ch.push(st)
		return nil
	}
	ch.push(resolverState(eps))
	return nil
}

// push gives the channel st with the last config command's service config,
// as a resolver that returns service configs sends it with every update.
func (ch *channel) push(st resolver.State) {
	ch.mu.Lock()
	ch.last = st
	st.ServiceConfig = ch.sc
	ch.mu.Unlock()
	ch.res.UpdateState(st)
}

// config gives the channel a new service config through its resolver, with
// the last resolve command's addresses (L9: the resolver returns service
// configs; grpc-go switches policy when the config names another).
func (ch *channel) config(serviceConfig string) error {
	if ch.res == nil {
		return fmt.Errorf("the channel's target is not conform:///; it has no resolver to push a service config through")
	}
	ch.mu.Lock()
	rcc := ch.rcc
	ch.mu.Unlock()
	if rcc == nil {
		return fmt.Errorf("the channel has not built its resolver yet")
	}
	pr := rcc.ParseServiceConfig(serviceConfig)
	if pr.Err != nil {
		return fmt.Errorf("grpc-go refused the service config: %v", pr.Err)
	}
	ch.mu.Lock()
	ch.sc = pr
	st := ch.last
	ch.mu.Unlock()
	ch.push(st)
	return nil
}

func hasAttributes(attrs []map[string]string) bool {
	for _, a := range attrs {
		if len(a) > 0 {
			return true
		}
	}
	return false
}

// startRPC starts one unary call with an empty raw-bytes request; its
// outcome is an rpc-result event.
func (ch *channel) startRPC(c command) error {
	if c.RPC == "" || c.Method == "" {
		return fmt.Errorf("rpc needs rpc and method")
	}
	ctx, cancel := context.WithCancel(ch.ctx)
	if c.DeadlineMS > 0 {
		ctx, cancel = context.WithTimeout(ch.ctx, time.Duration(c.DeadlineMS)*time.Millisecond)
	}
	md := metadata.New(c.Metadata)
	if ch.rpcKey != "" {
		md.Set(ch.rpcKey, c.RPC)
	}
	if md.Len() > 0 {
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	ch.wg.Add(1)
	go func() {
		defer ch.wg.Done()
		defer cancel()
		ch.emit(ch.call(ctx, c))
	}()
	return nil
}

func (ch *channel) call(ctx context.Context, c command) map[string]any {
	var hdr metadata.MD
	var reply []byte
	err := ch.cc.Invoke(ctx, c.Method, []byte{}, &reply,
		grpc.ForceCodec(rawCodec{}), grpc.Header(&hdr), grpc.WaitForReady(c.WaitForReady))
	ev := map[string]any{"ev": "rpc-result", "rpc": c.RPC}
	if err != nil {
		st := status.Convert(err)
		ev["code"], ev["err"] = codeName(uint32(st.Code())), st.Message()
		return ev
	}
	ev["code"] = "OK"
	if v := hdr.Get(backendHeader); len(v) > 0 {
		ev["backend"] = v[0]
	}
	return ev
}

// close ends the RPCs, closes the channel (the watcher reports SHUTDOWN)
// and waits for every goroutine the channel started.
func (ch *channel) close() {
	ch.cancel()
	ch.cc.Close()
	ch.wg.Wait()
}
