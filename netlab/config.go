package netlab

import (
	"fmt"
	"log/slog"
	"regexp"
)

// Families says which address families a backend listens on.
type Families int

// The families a backend can have.
const (
	Dual     Families = iota // IPv4 and IPv6
	IPv4Only                 // IPv4 only
	IPv6Only                 // IPv6 only
)

func (f Families) String() string {
	switch f {
	case Dual:
		return "dual"
	case IPv4Only:
		return "ipv4"
	case IPv6Only:
		return "ipv6"
	}
	return fmt.Sprintf("Families(%d)", int(f))
}

// HasIPv4 reports whether f includes IPv4.
func (f Families) HasIPv4() bool { return f == Dual || f == IPv4Only }

// HasIPv6 reports whether f includes IPv6.
func (f Families) HasIPv6() bool { return f == Dual || f == IPv6Only }

// BackendConfig describes one backend host.
type BackendConfig struct {
	Name     string
	Families Families
}

// Config describes a lab. It is plain data: Start validates it and builds
// the running Lab.
type Config struct {
	// Backends, each in its own namespace, in index order (the index
	// determines the addresses).
	Backends []BackendConfig
	// Port every backend listens on. Default 50051.
	Port int
	// Clients is the number of client hosts. Default 1.
	Clients int
	// Capture records SYNs and their fate in client 0's namespace.
	Capture bool
	// WatchStalls records, while the lab is open, the intervals in which
	// the machine was too busy to run a ready thread at once (EventStall;
	// see StallThreshold).
	WatchStalls bool
	// OnEvent, if set, is called for every event as it is recorded (capture
	// events arrive a little after the fact; Events() is in time order).
	OnEvent func(Event)
	// Logger receives the lab's own diagnostics. Default: discard.
	Logger *slog.Logger
}

// The limits of a lab, from the address plan (see Addressing).
const (
	MaxBackends = 4096
	MaxClients  = 250
	DefaultPort = 50051
)

var backendName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// Validate reports the first field that is not valid, naming it.
func (c Config) Validate() error {
	if len(c.Backends) > MaxBackends {
		return fmt.Errorf("netlab: Config.Backends: %d backends, at most %d", len(c.Backends), MaxBackends)
	}
	seen := make(map[string]int, len(c.Backends))
	for i, b := range c.Backends {
		if !backendName.MatchString(b.Name) {
			return fmt.Errorf("netlab: Config.Backends[%d].Name: %q must match %s", i, b.Name, backendName)
		}
		if j, dup := seen[b.Name]; dup {
			return fmt.Errorf("netlab: Config.Backends[%d].Name: %q is also Backends[%d]", i, b.Name, j)
		}
		seen[b.Name] = i
		if b.Families < Dual || b.Families > IPv6Only {
			return fmt.Errorf("netlab: Config.Backends[%d].Families: unknown value %d", i, int(b.Families))
		}
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("netlab: Config.Port: %d is not a TCP port", c.Port)
	}
	if c.Clients < 0 || c.Clients > MaxClients {
		return fmt.Errorf("netlab: Config.Clients: %d, want 1..%d (0 means 1)", c.Clients, MaxClients)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
