package driver

import (
	"slices"
	"testing"
)

// TestDriverEnviron_KeepsOnlyWhatCannotChangeTheClient verifies what a
// driver inherits from conform's environment: gRPC's and conform's logging
// variables and everything unrelated, but no gRPC setting, no conform
// setting a driver reads (a user's CONFORM_POLICY_MAP would otherwise remap
// grpc-go's own policies) and no proxy.
func TestDriverEnviron_KeepsOnlyWhatCannotChangeTheClient(t *testing.T) {
	in := []string{
		"PATH=/usr/bin", "HOME=/root", "GRPC_TRACE=all", "GRPC_VERBOSITY=DEBUG",
		"CONFORM_GRPC_JS_LOG_EVENTS=1",
		"GRPC_XDS_BOOTSTRAP=/etc/bootstrap.json", "GRPC_EXPERIMENTAL_ENABLE_NEW_PICK_FIRST=false",
		"CONFORM_POLICY_MAP=pick_first=acme", "CONFORM_CAN=shuffle",
		`CONFORM_GRPC_JS_CHANNEL_OPTIONS={"grpc.client_idle_timeout_ms":1000}`, "CONFORM_JAVA_WARM_UP=1",
		"https_proxy=http://proxy:3128", "HTTPS_PROXY=http://proxy:3128", "no_proxy=*",
	}
	want := []string{"PATH=/usr/bin", "HOME=/root", "GRPC_TRACE=all", "GRPC_VERBOSITY=DEBUG", "CONFORM_GRPC_JS_LOG_EVENTS=1"}
	if got := driverEnviron(in); !slices.Equal(got, want) {
		t.Errorf("driverEnviron =\n%q\nwant\n%q", got, want)
	}
}
