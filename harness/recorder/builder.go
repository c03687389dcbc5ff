package recorder

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
)

// Name is the name the recorder is registered under. Its config is
//
//	{"child": [{"<policy>": <config>}, ...], "sink": "<sink name>", "seed": 1}
//
// seed, when not zero, seeds the randomness of seam-aware children (as
// Options.Seed does), so that a lab run draws what a simulated run with the
// same seed draws.
//
// child is a LoadBalancingConfig list: the first registered policy is used.
// sink names a sink given to RegisterSink; without it the default sink ("")
// is used, and events are discarded when no sink is registered.
const Name = "conform_recorder"

func init() {
	balancer.Register(registered{})
}

// Options configure a recorder built with New.
type Options struct {
	// Name is the name the builder reports (and is registered under, if the
	// caller registers it). Default: "conform_recorder:" + the child's name.
	Name string
	// Sink receives the events. Default: discard them.
	Sink Sink
	// Seed seeds the randomness of the wall clock given to seam-aware
	// children when the channel carries no clock. Zero: a random seed.
	Seed uint64
	// Now, if set, is the timebase of the events' T (a lab's Now, say);
	// by default T is the time since the recorder was built.
	Now func() time.Duration
}

// New returns a builder of recorders around child, for programmatic use:
// its config is the child's own config, parsed by the child. The builder is
// clock.Aware when child is, so the simulator runs both on virtual time.
func New(child balancer.Builder, opts Options) balancer.Builder {
	if opts.Name == "" {
		opts.Name = Name + ":" + child.Name()
	}
	b := &fixedBuilder{child: child, opts: opts}
	if _, ok := child.(clock.Aware); ok {
		return awareBuilder{b}
	}
	return b
}

// lbConfig is the recorder's parsed config.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig
	child    balancer.Builder
	childCfg serviceconfig.LoadBalancingConfig // nil: the child takes none
	sink     string
	seed     uint64
}

// registered is the builder registered as conform_recorder.
type registered struct{}

var (
	_ balancer.Builder      = registered{}
	_ balancer.ConfigParser = registered{}
)

func (registered) Name() string { return Name }

func (registered) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return newRecorder(cc, opts, Options{}, nil)
}

type jsonConfig struct {
	Child []map[string]json.RawMessage `json:"child"`
	Sink  string                       `json:"sink"`
	Seed  uint64                       `json:"seed"`
}

func (registered) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var jc jsonConfig
	if err := json.Unmarshal(js, &jc); err != nil {
		return nil, fmt.Errorf("%s: config: %v", Name, err)
	}
	for i, entry := range jc.Child {
		if len(entry) != 1 {
			return nil, fmt.Errorf("%s: config: child[%d] has %d policies, want 1", Name, i, len(entry))
		}
		for name, raw := range entry {
			b := balancer.Get(name)
			if b == nil {
				continue // a LoadBalancingConfig list: the first registered one wins
			}
			cfg, err := parseChildConfig(b, raw)
			if err != nil {
				return nil, fmt.Errorf("%s: config: child[%d] %q: %v", Name, i, name, err)
			}
			return &lbConfig{child: b, childCfg: cfg, sink: jc.Sink, seed: jc.Seed}, nil
		}
	}
	return nil, fmt.Errorf("%s: config: child lists no registered policy", Name)
}

// parseChildConfig parses raw with b's parser, if b has one.
func parseChildConfig(b balancer.Builder, raw json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	p, ok := b.(balancer.ConfigParser)
	if !ok {
		return nil, nil
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	return p.ParseConfig(raw)
}

// fixedBuilder is a builder made by New: one child, one sink.
type fixedBuilder struct {
	child balancer.Builder
	opts  Options
}

var (
	_ balancer.Builder      = (*fixedBuilder)(nil)
	_ balancer.ConfigParser = (*fixedBuilder)(nil)
)

func (b *fixedBuilder) Name() string { return b.opts.Name }

func (b *fixedBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return newRecorder(cc, opts, b.opts, b.child)
}

// ParseConfig parses the child's own config with the child's parser.
func (b *fixedBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	cfg, err := parseChildConfig(b.child, js)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.opts.Name, err)
	}
	return &lbConfig{child: b.child, childCfg: cfg}, nil
}

// awareBuilder is a fixedBuilder around a clock.Aware child.
type awareBuilder struct{ *fixedBuilder }

var _ clock.Aware = awareBuilder{}

// OnClockSeam marks the recorder as seam-aware because its child is.
func (awareBuilder) OnClockSeam() {}
