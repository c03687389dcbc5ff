package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/conformlab/conform/drivers/go/protocol"
	"github.com/conformlab/conform/harness/driver"
)

const policyUsage = "map a scenario policy onto your balancer's, STANDARD=YOURS (pick_first=acme_pick_first;\n" +
	"repeat, or join with commas), for every --impl go:…: the scenarios naming it run yours"

const canUsage = "a capability of your balancer's mapped policy that conform cannot tell from\n" +
	"outside: shuffle (pick_first: A62's shuffleAddressList), connection_attempt_delay (pick_first),\n" +
	"request_hash_header (ring_hash); without it, the rules for policies without it apply"

// validatePolicies checks --policy and --can before any work: each mapping
// is well formed, each capability is one of a mapped policy's, and there is
// a user's balancer to map onto.
func validatePolicies(command string, policies, can, impls []string) error {
	if len(policies) == 0 && len(can) == 0 {
		return nil
	}
	m, err := protocol.ParsePolicyMap(policies...)
	if err != nil {
		return badUsage("%s: --policy: %v", command, err)
	}
	if _, err := protocol.ParseCan(m, can...); err != nil {
		return badUsage("%s: --can: %v", command, err)
	}
	for _, arg := range impls {
		if strings.HasPrefix(arg, driver.GoBalancer+":") {
			return nil
		}
	}
	return badUsage("%s: --policy maps the scenarios' policies onto your own balancer's: give it as --impl go:<module>@<version> or --impl go:<dir>", command)
}

// withPolicies gives every user's balancer among impls the --policy
// mapping and the --can capabilities (validated).
func withPolicies(impls []driver.Release, policies, can []string) []driver.Release {
	m, _ := protocol.ParsePolicyMap(policies...)
	caps, _ := protocol.ParseCan(m, can...)
	out := make([]driver.Release, len(impls))
	for i, impl := range impls {
		out[i] = impl.WithPolicies(m, caps)
	}
	return out
}

// buildBalancers builds the Go driver of every user's balancer among impls
// into the cache (nothing, when it is there) and checks the policy mapping
// against what the build registered, before the lab or any scenario: a
// module that does not build, or a mapping onto a policy it does not
// register, is a usage error of one line naming it.
func buildBalancers(ctx context.Context, impls []driver.Release, w io.Writer) error {
	var cache string
	for _, impl := range impls {
		if impl.Name != driver.GoBalancer {
			continue
		}
		if cache == "" {
			c, err := driver.CacheDir()
			if err != nil {
				return err
			}
			cache = c
		}
		fmt.Fprintf(w, "conform: %s: preparing the Go driver with it (a first build takes about a minute)\n", impl)
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		cmd, err := driver.Install(ctx, impl, driver.InstallEnv{Cache: cache, Logger: logger})
		if err == nil {
			err = driver.CheckGoBalancer(ctx, impl, cmd)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case driver.IsBadRelease(err):
			return usageError{err}
		case err != nil:
			return fmt.Errorf("%s: the driver could not be built, so no scenario ran: %w", impl, err)
		}
	}
	return nil
}
