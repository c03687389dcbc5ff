package java_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/drivers/java"
	"github.com/conformlab/conform/harness/driver"
)

// TestGRPCVersion_FromDebianVersion: grpc-java's version is the Debian
// version without epoch, repack suffix and revision.
func TestGRPCVersion_FromDebianVersion(t *testing.T) {
	for deb, want := range map[string]string{"1.41.3+ds-1": "1.41.3", "1:1.60.1-2": "1.60.1", "1.41.3": "1.41.3", "1.41.3~rc1-1": "1.41.3"} {
		if got := (java.System{Version: deb}).GRPCVersion(); got != want {
			t.Errorf("GRPCVersion(%q) = %q, want %q", deb, got, want)
		}
	}
}

// TestCheck_NothingOnPath_SaysInstallCommand: without dpkg-query and a JDK
// on PATH, Check names the missing packages and the command to run.
func TestCheck_NothingOnPath_SaysInstallCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := java.Check(t.Context())
	if err == nil {
		t.Fatal("Check with an empty PATH succeeded")
	}
	for _, want := range []string{"libgrpc-java", "default-jdk-headless", java.InstallCommand} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %q does not name %q", err, want)
		}
	}
}

// runOffline compiles the driver (skipping without the packages), runs it
// outside any lab with input on stdin and returns its stdout lines, parsed.
// No command here connects anywhere.
func runOffline(t *testing.T, input string) []map[string]any {
	t.Helper()
	if _, err := java.Check(t.Context()); err != nil {
		t.Skip(err.Error())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := driver.Install(ctx, driver.Release{Name: driver.GRPCJava}, driver.InstallEnv{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver exit: %v, want 0; stderr:\n%s", err, stderr.String())
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("stdout line is not JSON (%v): %q", err, l)
			continue
		}
		lines = append(lines, m)
	}
	if strings.Contains(stderr.String(), "Exception") {
		t.Errorf("driver printed an exception:\n%s", stderr.String())
	}
	return lines
}

// TestDriver_MalformedInput_ErrorLinesThenExit0: every malformed line gets an
// error line (with the id when there is one), nothing but protocol lines
// reach stdout, hello says what Debian's grpc-java can do, and close ends
// the driver before the next line.
func TestDriver_MalformedInput_ErrorLinesThenExit0(t *testing.T) {
	input := strings.Join([]string{
		`{"id":1,"op":"hello"}`,
		`not json`,
		`[1,2]`,
		`{"op":"hello"}`,
		`{"id":2,"op":"fly"}`,
		`{"id":3,"op":"rpc","rpc":"r1","method":"/conform.lab.Backend/Name"}`,
		`{"id":4,"op":"resolve","endpoints":[["198.19.0.1:50051"]]}`,
		`{"id":5,"op":"create","target":"xds:///listener","service_config":""}`,
		`{"id":6,"op":"create","target":"conform:///t","service_config":"[1]"}`,
		`{"id":7,"op":"create","target":42}`,
		"\xff\xfe",
		``,
		`{"id":8,"op":"close"}`,
		`{"id":9,"op":"hello"}`,
	}, "\n") + "\n"
	lines := runOffline(t, input)
	want := []struct {
		id  any // nil: no id
		ev  string
		err string // a substring of err
	}{
		{1.0, "ok", ""},
		{nil, "error", "malformed"},
		{nil, "error", "JSON object"},
		{nil, "error", "without an id"},
		{2.0, "error", "unknown op"},
		{3.0, "error", "no channel"},
		{4.0, "error", "no channel"},
		{5.0, "error", "no xDS module"},
		{6.0, "error", "not a JSON object"},
		{7.0, "error", "wrong type"},
		{nil, "error", "not UTF-8"},
		{8.0, "ok", ""},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%v", len(lines), len(want), lines)
	}
	for i, w := range want {
		l := lines[i]
		if l["id"] != w.id || l["ev"] != w.ev || !strings.Contains(stringOf(l["err"]), w.err) {
			t.Errorf("line %d = %v, want id %v ev %s err containing %q", i+1, l, w.id, w.ev, w.err)
		}
	}
	b, _ := json.Marshal(lines[0]["hello"])
	var h driver.Hello
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	// 1.41 predates A62's shuffleAddressList (grpc-java 1.56); Debian packages
	// neither grpc-xds nor grpc-services (health checking).
	if h.Impl != driver.GRPCJava || h.Observes != "every-change" || !h.Can[driver.CanEndpoints] ||
		h.Can[driver.CanXDS] || h.Can[driver.CanHealthCheck] || h.Can[driver.CanShuffle] {
		t.Errorf("hello = %+v", h)
	}
	if len(h.Policies) < 2 || h.Policies[0] != "pick_first" || h.Policies[1] != "round_robin" {
		t.Errorf("hello policies = %v, want pick_first and round_robin first", h.Policies)
	}
}

func stringOf(v any) string { s, _ := v.(string); return s }
