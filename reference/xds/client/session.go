package client

import (
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Session is the client's protocol without a stream or a goroutine: its
// caller carries the messages. It validates, ACKs, NACKs, subscribes and
// builds configurations exactly as a Client does on its ADS stream (it is the
// same code), so that a simulator can run an xDS exchange synchronously and
// deterministically. Options.Conn and StreamBackoff are not used. A Session
// is not safe for concurrent use.
type Session struct {
	c   *Client
	out []*discoveryv3.DiscoveryRequest
	res Result
}

// Result is what handling one message produced: the requests the client
// sends, in order, and, when Delivered, what the Watcher would have been
// told last (a configuration, or an error that leaves the listener without
// one).
type Result struct {
	Requests  []*discoveryv3.DiscoveryRequest
	Delivered bool
	Config    *Config
	Err       error
}

// NewSession returns a session for opts.Listener. Start begins it.
func NewSession(opts Options) (*Session, error) {
	s := &Session{}
	c, err := newClient(opts, func(cfg *Config, err error) {
		s.res.Delivered, s.res.Config, s.res.Err = true, cfg, err
	})
	if err != nil {
		return nil, err
	}
	c.sendReq = func(r *discoveryv3.DiscoveryRequest) { s.res.Requests = append(s.res.Requests, r) }
	s.c = c
	return s, nil
}

// Start is a new stream: the client subscribes to everything it watches
// (at first, its listener).
func (s *Session) Start() Result {
	s.res = Result{}
	s.c.subscribeAll()
	return s.res
}

// Handle is one DiscoveryResponse received: the client validates it whole,
// ACKs or NACKs it, and on ACK subscribes to what the listener now depends
// on and delivers the configuration when it is complete.
func (s *Session) Handle(resp *discoveryv3.DiscoveryResponse) Result {
	s.res = Result{}
	s.c.handle(resp)
	return s.res
}
