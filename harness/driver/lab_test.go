package driver

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/driver/drivertest"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// testCache is one cache for the package's tests, removed at the end.
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conform-driver-test-")
	if err != nil {
		panic(err)
	}
	testCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func requireLab(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("driver: the lab needs root (CAP_NET_ADMIN) to create network namespaces")
	}
}

// install builds impl's driver into the test cache and logs how long it took.
func install(t *testing.T, impl Release) Command {
	t.Helper()
	start := time.Now()
	cmd, err := Install(context.Background(), impl, InstallEnv{Cache: testCache, Source: FindSource()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installing %s took %v", impl, time.Since(start).Round(time.Millisecond))
	return cmd
}

// TestInstall_UnknownGRPCGoVersion_SaysSo verifies a version the module
// proxy does not have is reported as such.
func TestInstall_UnknownGRPCGoVersion_SaysSo(t *testing.T) {
	if err := checkModuleExists(context.Background(), t.TempDir(), "google.golang.org/grpc@v1.55.0"); err != nil {
		t.Skipf("driver: the module proxy is not reachable: %v", err)
	}
	_, err := Install(context.Background(), Release{Name: GRPCGo, Version: "v1.999.0"}, InstallEnv{Cache: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not available from the module proxy") {
		t.Errorf("err = %v, want it to say the version is not on the proxy", err)
	}
}

// modTime is when path was last written: a cached driver is not rewritten.
func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// TestStart_BrokenDrivers_ErrorWithStderrTail verifies that a driver that
// crashes, hangs or prints garbage gives an error carrying its stderr tail,
// and leaves no process behind.
func TestStart_BrokenDrivers_ErrorWithStderrTail(t *testing.T) {
	requireLab(t)
	lab, err := netlab.Start(context.Background(), netlab.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	// Only the driver that hangs waits for the command timeout, which is
	// what it tests: it is short. The others answer (or die) at once and
	// wait on that, the default timeout only a guard against a hang.
	for name, c := range map[string]struct {
		script, want string
		timeout      time.Duration
	}{
		"crash":   {`echo "panic: boom in the driver" >&2; exit 2`, "exit status 2", 0},
		"hang":    {`echo "waiting forever" >&2; exec sleep 3600`, "no reply within", 500 * time.Millisecond},
		"garbage": {`read cmd; echo "waiting forever" >&2; echo "this is not json"; exec sleep 3600`, "not the protocol", 0},
		"bad-ev":  {`read cmd; echo "waiting forever" >&2; echo '{"ev":"teleport"}'; exec sleep 3600`, "unknown or incomplete event", 0},
	} {
		t.Run(name, func(t *testing.T) {
			var pid int
			_, err := startFake(lab, Command{Path: drivertest.Script(t, c.script)}, &pid, c.timeout)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--- driver stderr (tail) ---\n") {
				t.Fatalf("err = %v, want %q with the stderr tail", err, c.want)
			}
			if !strings.Contains(err.Error(), "boom") && !strings.Contains(err.Error(), "waiting forever") {
				t.Errorf("the error lacks the driver's stderr: %v", err)
			}
			if e := syscall.Kill(-pid, 0); !errors.Is(e, syscall.ESRCH) {
				t.Errorf("process group %d still exists after the error (kill: %v)", pid, e)
			}
		})
	}
}

// startFake starts a fake driver, says hello and notes its pid. timeout is
// the command timeout: 0 for the default (10 s), a guard against a hang
// for a driver that answers; a short one only where the test waits for it
// to expire (a driver that never answers).
func startFake(lab *netlab.Lab, c Command, pid *int, timeout time.Duration) (*Process, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	p := newProcess(ProcessOptions{Now: lab.Now, Record: func(trace.Event) {}, CommandTimeout: timeout})
	if err := p.start(lab, c); err != nil {
		return nil, err
	}
	*pid = p.Pid()
	var h reply
	if err := p.command(map[string]any{"op": "hello"}, &h); err != nil {
		return nil, err
	}
	return p, nil
}
