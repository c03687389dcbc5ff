package python

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runOffline runs the driver outside any lab with input on stdin and returns
// its stdout lines (parsed) and its exit error. No command here creates a
// channel, so nothing touches the network.
func runOffline(t *testing.T, input string, args ...string) ([]map[string]any, string, error) {
	t.Helper()
	if _, err := os.Stat(Interpreter); err != nil {
		t.Skipf("python driver: %s not found", Interpreter)
	}
	cmd := exec.Command(Interpreter, append(args, "driver.py")...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("driver still running 30s after its input ended; stderr:\n%s", stderr.String())
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if jerr := json.Unmarshal([]byte(l), &m); jerr != nil {
			t.Errorf("stdout line is not JSON (%v): %q", jerr, l)
			continue
		}
		lines = append(lines, m)
	}
	return lines, stderr.String(), err
}

// TestDriver_MalformedInput_ErrorLinesThenExit0: every malformed line gets an
// error line (with the id when there is one), conform:/// and resolve are
// refused with the reason, nothing but JSON reaches stdout, and EOF is a clean
// exit.
func TestDriver_MalformedInput_ErrorLinesThenExit0(t *testing.T) {
	if _, err := Check(t.Context()); err != nil {
		t.Skip(err.Error())
	}
	input := strings.Join([]string{
		`{"id":1,"op":"hello"}`,
		`not json`,
		`[1,2]`,
		`{"op":"hello"}`,
		`{"id":2,"op":"fly"}`,
		`{"id":3,"op":"create","target":"conform:///he"}`,
		`{"id":4,"op":"resolve","endpoints":[["198.19.0.1:50051"]]}`,
		`{"id":5,"op":"rpc","rpc":"r1","method":"/conform.lab.Backend/Name"}`,
		`{"id":6,"op":"create","target":"dns://198.18.255.53/svc.conform:50051"}`,
		`{"id":7,"op":"create","target":42}`,
		`{"id":8,"op":"create","target":"dns:///svc.conform:50051","idle_timeout_ms":-5}`,
		`{"id":9,"op":"create","target":"dns:///svc.conform:50051","idle_timeout_ms":"1s"}`,
		"\xff\xfe",
		``,
	}, "\n") + "\n"
	lines, stderr, err := runOffline(t, input)
	if err != nil {
		t.Fatalf("exit: %v, want 0; stderr:\n%s", err, stderr)
	}
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
		{3.0, "error", "no custom resolver API"},
		{4.0, "error", "no custom resolver API"},
		{5.0, "error", "no channel"},
		{6.0, "error", "with its port"},
		{7.0, "error", "wrong type"},
		{8.0, "error", "must not be negative"},
		{9.0, "error", "wrong type"},
		{nil, "error", "malformed"},
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
	h, _ := lines[0]["hello"].(map[string]any)
	if h["impl"] != "grpcio" || h["observes"] != "polling" {
		t.Errorf("hello = %v", lines[0])
	}
	if can, _ := h["can"].(map[string]any); can["idle_timeout"] != true {
		t.Errorf("hello can = %v, want idle_timeout true (C-core's grpc.client_idle_timeout_ms)", h["can"])
	}
	// xds from grpcio 1.51 on (C-core's xDS client, run over the lab's
	// management server since Debian's 1.51.1).
	var major, minor int
	fmt.Sscanf(stringOf(h["version"]), "%d.%d", &major, &minor)
	can, _ := h["can"].(map[string]any)
	if wantXDS := major > 1 || major == 1 && minor >= 51; can["xds"] != wantXDS {
		t.Errorf("hello of grpcio %v says xds %v, want %v", h["version"], can["xds"], wantXDS)
	}
	// C-core checks health when the service config asks (A17).
	if can["health_check"] != true {
		t.Errorf("hello of grpcio %v says health_check %v, want true", h["version"], can["health_check"])
	}
	if strings.Contains(stderr, "Traceback") {
		t.Errorf("driver printed a traceback:\n%s", stderr)
	}
}

// TestDriver_Close_ReplyThenExit0: close without a channel is ok, and the
// driver exits 0 without reading further.
func TestDriver_Close_ReplyThenExit0(t *testing.T) {
	if _, err := Check(t.Context()); err != nil {
		t.Skip(err.Error())
	}
	lines, _, err := runOffline(t, `{"id":"a","op":"close"}`+"\n"+`{"id":"b","op":"hello"}`+"\n")
	if err != nil {
		t.Fatalf("exit: %v, want 0", err)
	}
	if len(lines) != 1 || lines[0]["id"] != "a" || lines[0]["ev"] != "ok" {
		t.Errorf("lines = %v, want only the close reply", lines)
	}
}

// TestDriver_NoGRPCIO_SaysInstallCommand: without grpcio (python -S hides
// the system packages), hello is an error naming the install command, and the
// driver still exits 0.
func TestDriver_NoGRPCIO_SaysInstallCommand(t *testing.T) {
	lines, _, err := runOffline(t, `{"id":1,"op":"hello"}`+"\n", "-S")
	if err != nil {
		t.Fatalf("exit: %v, want 0", err)
	}
	if len(lines) != 1 || lines[0]["ev"] != "error" || !strings.Contains(stringOf(lines[0]["err"]), "apt-get install -y python3-grpcio") {
		t.Errorf("lines = %v, want one error naming the install command", lines)
	}
}

func stringOf(v any) string { s, _ := v.(string); return s }
