package driver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/drivers/java"
)

// requireJava skips, with the reason (the packages to install), when
// Debian's grpc-java packages or the JDK are missing.
func requireJava(t *testing.T) java.System {
	t.Helper()
	sys, err := java.Check(t.Context())
	if err != nil {
		t.Skip(err.Error())
	}
	return sys
}

// TestInstallJava_CompilesOnceAndSaysHello verifies that the first install
// compiles the driver into the cache under the installed libgrpc-java's
// version, the second reuses it untouched, nothing half-written is left
// beside it, and the command it returns starts a driver whose hello names
// that grpc-java.
func TestInstallJava_CompilesOnceAndSaysHello(t *testing.T) {
	sys := requireJava(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	env := InstallEnv{Cache: t.TempDir()}
	cold, err := Install(ctx, Release{Name: GRPCJava}, env)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(env.Cache, "drivers", "java"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "grpc-java@"+sys.Version+"-") {
		t.Fatalf("cache entries %v, want one grpc-java@%s-…", entries, sys.Version)
	}
	class := filepath.Join(env.Cache, "drivers", "java", entries[0].Name(), java.MainClass+".class")
	built := modTime(t, class)
	warm, err := Install(ctx, Release{Name: GRPCJava, Version: sys.GRPCVersion()}, env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(warm.Args, " ") != strings.Join(cold.Args, " ") || !modTime(t, class).Equal(built) {
		t.Errorf("second install: %v (class %v), want %v reused (class %v)", warm, modTime(t, class), cold, built)
	}

	cmd := exec.CommandContext(ctx, cold.Path, cold.Args...)
	cmd.Stdin = strings.NewReader(`{"id":1,"op":"hello"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("driver: %v", err)
	}
	var r struct {
		ID    int    `json:"id"`
		Ev    string `json:"ev"`
		Hello Hello  `json:"hello"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("driver output %q: %v", out, err)
	}
	if r.ID != 1 || r.Ev != "ok" || r.Hello.Impl != GRPCJava || r.Hello.Version != sys.GRPCVersion() {
		t.Errorf("hello = %+v, want grpc-java %s", r, sys.GRPCVersion())
	}
}

// TestInstallJava_OtherVersion_Refused: a version other than the installed
// one is refused, naming both, and nothing is compiled.
func TestInstallJava_OtherVersion_Refused(t *testing.T) {
	sys := requireJava(t)
	env := InstallEnv{Cache: t.TempDir()}
	_, err := Install(t.Context(), Release{Name: GRPCJava, Version: "1.99.0"}, env)
	if err == nil || !strings.Contains(err.Error(), "grpc-java@1.99.0") || !strings.Contains(err.Error(), sys.GRPCVersion()) {
		t.Errorf("Install(grpc-java@1.99.0) error = %v, want one naming 1.99.0 and %s", err, sys.GRPCVersion())
	}
	if _, err := os.Stat(filepath.Join(env.Cache, "drivers")); !os.IsNotExist(err) {
		t.Errorf("a refused install wrote into the cache (%v)", err)
	}
}

// TestCompileJava_Failure_LeavesNoEntry: a compile that fails leaves
// neither the entry nor its temporary directory.
func TestCompileJava_Failure_LeavesNoEntry(t *testing.T) {
	sys := requireJava(t)
	sys.ClassPath = nil // Driver.java cannot compile without grpc-java's jars
	parent := t.TempDir()
	dir := filepath.Join(parent, "grpc-java@test")
	err := compileJava(t.Context(), sys, dir)
	if err == nil || !strings.Contains(err.Error(), "javac") {
		t.Fatalf("compileJava without jars: %v, want javac's error", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("a failed compile left %v", entries)
	}
}

// TestPublished_GRPCJava_OnlyTheInstalledVersion: before any work, a
// grpc-java version other than the installed one is refused as not there
// (a usage error for verify), naming the installed one; the installed one
// passes.
func TestPublished_GRPCJava_OnlyTheInstalledVersion(t *testing.T) {
	sys := requireJava(t)
	err := Published(t.Context(), Release{Name: GRPCJava, Version: "1.99.0"})
	if !IsNotPublished(err) || !strings.Contains(err.Error(), "1.99.0") || !strings.Contains(err.Error(), GRPCJava+"@"+sys.GRPCVersion()) {
		t.Errorf("Published(grpc-java@1.99.0) = %v, want a NotPublishedError naming grpc-java@%s", err, sys.GRPCVersion())
	}
	if err := Published(t.Context(), Release{Name: GRPCJava, Version: sys.GRPCVersion()}); err != nil {
		t.Errorf("Published(grpc-java@%s) = %v, want nil", sys.GRPCVersion(), err)
	}
}
