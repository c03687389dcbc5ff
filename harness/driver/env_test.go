package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
)

// TestRunLab_DriverGetsTheScenarioEnvOnly verifies a driver process runs
// with the scenario's gRPC switches in its environment, and without the gRPC
// settings or proxies conform's own environment has (its gRPC logging
// settings pass).
func TestRunLab_DriverGetsTheScenarioEnvOnly(t *testing.T) {
	requireLab(t)
	dir := t.TempDir()
	t.Setenv(scenario.EnvPickFirstLBConfig, "false")
	t.Setenv("GRPC_DNS_RESOLVER", "native")
	t.Setenv("https_proxy", "http://proxy.example:3128")
	t.Setenv("GRPC_TRACE", "xds_client")
	drv := fakeDriver(t, `printf '%s' "${`+scenario.EnvAggregateClusterBackwardCompat+`-unset}" > `+dir+`/compat
printf '%s' "${`+scenario.EnvPickFirstLBConfig+`-unset}" > `+dir+`/pickfirst
printf '%s' "${GRPC_DNS_RESOLVER-unset}" > `+dir+`/dnsresolver
printf '%s' "${https_proxy-unset}" > `+dir+`/proxy
printf '%s' "${GRPC_TRACE-unset}" > `+dir+`/trace
read line
id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
echo '{"id":'$id',"ev":"ok","hello":{"protocol":1,"impl":"fake","version":"1","can":{},"observes":"every-change"}}'
cat >/dev/null`)
	Register("fake-env", InstallerFunc(func(context.Context, Impl, InstallEnv) (Command, error) { return drv, nil }))
	s := scenario.New("env-to-driver").
		Backend("b1", scenario.Dual).
		Env(scenario.EnvAggregateClusterBackwardCompat, "true").
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		End(time.Second).
		MustBuild()
	_, err := RunLab(context.Background(), s, Impl{Name: "fake-env"}, Options{Cache: t.TempDir()})
	var na *NotApplicable
	if !errors.As(err, &na) {
		t.Fatalf("err = %v, want not-applicable (the fake can express nothing)", err)
	}
	for file, want := range map[string]string{"compat": "true", "pickfirst": "unset", "dnsresolver": "unset", "proxy": "unset", "trace": "xds_client"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(got) != want {
			t.Errorf("driver's %s switch = %q (%v), want %q", file, got, err, want)
		}
	}
}

// TestRunLab_ReferenceRefusesEnvItCannotHonour verifies the reference's
// driver is not started with a switch it has no option for: the run fails,
// naming the variable.
func TestRunLab_ReferenceRefusesEnvItCannotHonour(t *testing.T) {
	s := scenario.New("env-reference").
		Backend("b1", scenario.V4Only).
		Env(scenario.EnvXDSDualstackEndpoints, "false").
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		End(time.Second).
		MustBuild()
	_, err := RunLab(context.Background(), s, Impl{Name: Reference}, Options{Cache: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "client.env."+scenario.EnvXDSDualstackEndpoints) {
		t.Fatalf("err = %v, want one naming client.env.%s", err, scenario.EnvXDSDualstackEndpoints)
	}
}
