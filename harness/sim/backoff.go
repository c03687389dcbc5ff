package sim

import (
	"time"

	"github.com/conformlab/conform/harness/clock"
)

// BackoffConfig holds the parameters of the connection backoff protocol
// (spec/related/connection-backoff.md, "Proposed Backoff Algorithm").
type BackoffConfig struct {
	InitialBackoff    time.Duration // INITIAL_BACKOFF
	Multiplier        float64       // MULTIPLIER
	Jitter            float64       // JITTER, a fraction: 0.2 is ±20 %
	MaxBackoff        time.Duration // MAX_BACKOFF
	MinConnectTimeout time.Duration // MIN_CONNECT_TIMEOUT
}

// DefaultBackoff is the protocol's specific parameters (connection-backoff.md:
// 1 s, ×1.6, ±20 %, 120 s, 20 s).
var DefaultBackoff = BackoffConfig{
	InitialBackoff:    time.Second,
	Multiplier:        1.6,
	Jitter:            0.2,
	MaxBackoff:        120 * time.Second,
	MinConnectTimeout: 20 * time.Second,
}

// withDefaults returns c with every unset duration or multiplier taken from
// DefaultBackoff. A zero BackoffConfig is DefaultBackoff; Jitter is taken as
// given otherwise, since zero jitter is a meaningful choice.
func (c BackoffConfig) withDefaults() BackoffConfig {
	if c == (BackoffConfig{}) {
		return DefaultBackoff
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = DefaultBackoff.InitialBackoff
	}
	if c.Multiplier <= 0 {
		c.Multiplier = DefaultBackoff.Multiplier
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultBackoff.MaxBackoff
	}
	if c.MinConnectTimeout <= 0 {
		c.MinConnectTimeout = DefaultBackoff.MinConnectTimeout
	}
	return c
}

// Backoff is the backoff after the retries-th consecutive failed attempt
// (retries counts from 0): INITIAL_BACKOFF × MULTIPLIER^retries, capped at
// MAX_BACKOFF, then jittered uniformly by ±JITTER (connection-backoff.md).
// Like grpc-go, the first backoff is jittered too and the jitter applies after
// the cap.
func (c BackoffConfig) Backoff(retries int, r clock.Rand) time.Duration {
	b, limit := float64(c.InitialBackoff), float64(c.MaxBackoff)
	for ; retries > 0 && b < limit; retries-- {
		b *= c.Multiplier
	}
	if b > limit {
		b = limit
	}
	b *= 1 + c.Jitter*(r.Float64()*2-1)
	if b < 0 {
		return 0
	}
	return time.Duration(b)
}

// ConnectTimeout is the time one connection attempt gets:
// Max(current backoff, MIN_CONNECT_TIMEOUT) (connection-backoff.md).
func (c BackoffConfig) ConnectTimeout(backoff time.Duration) time.Duration {
	return max(backoff, c.MinConnectTimeout)
}
