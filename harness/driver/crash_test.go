package driver

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/conformlab/conform/harness/driver/drivertest"
	"github.com/conformlab/conform/netlab"
)

// TestProcess_ImplementationCrash_IsACrash runs a driver that answers hello
// and then dies of SIGSEGV, as C-core did under grpcio 1.51: the command's
// error is a *Crash naming the signal, with the driver's stderr. A driver
// that exits with a plain status is not a crash.
func TestProcess_ImplementationCrash_IsACrash(t *testing.T) {
	requireLab(t)
	lab, err := netlab.Start(context.Background(), netlab.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	hello := `read line
id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
echo '{"id":'$id',"ev":"ok","hello":{"protocol":1,"impl":"fake","version":"1","can":{},"observes":"every-change"}}'
read line
echo "C-core: about to fall over" >&2
`
	for name, c := range map[string]struct {
		exit  string
		crash bool
	}{
		"segfault": {`kill -SEGV $$`, true},
		"abort":    {`kill -ABRT $$`, true},
		"exit 3":   {`exit 3`, false},
	} {
		t.Run(name, func(t *testing.T) {
			var pid int
			p, err := startFake(lab, Command{Path: drivertest.Script(t, hello+c.exit)}, &pid, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			err = p.Create("conform:///x", "")
			var cr *Crash
			if got := errors.As(err, &cr); got != c.crash {
				t.Fatalf("err = %v (%T): crash %v, want %v", err, err, got, c.crash)
			}
			if c.crash && (cr.Signal != syscall.SIGSEGV && cr.Signal != syscall.SIGABRT ||
				!strings.Contains(cr.Crashed(), cr.Signal.String()) || !strings.Contains(err.Error(), "fall over")) {
				t.Errorf("crash %v: %s: %v, want the signal and the stderr tail", cr.Signal, cr.Crashed(), err)
			}
		})
	}
}

// TestGoPanic_ImplementationsOnly verifies a Go driver's death by a panic
// is a crash when the panic was raised in grpc-go's code, and not when it
// was the driver's own, or when the exit status is not the Go runtime's.
func TestGoPanic_ImplementationsOnly(t *testing.T) {
	exit := func(code string) error { return exec.Command("sh", "-c", "exit "+code).Run() }
	inGRPC := "panic: runtime error: invalid memory address or nil pointer dereference\n" +
		"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x5a1b2c]\n\n" +
		"goroutine 42 [running]:\n" +
		"google.golang.org/grpc/balancer/pickfirst.(*pickfirstBalancer).updateSubConnState(0x0, ...)\n" +
		"\t/root/go/pkg/mod/google.golang.org/grpc@v1.85.0/balancer/pickfirst/pickfirst.go:300 +0x1c\n"
	inDriver := "panic: driver bug\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:10 +0x1\n"
	for _, c := range []struct {
		name   string
		err    error
		stderr string
		want   bool
	}{
		{"grpc-go panic", exit("2"), inGRPC, true},
		{"driver panic", exit("2"), inDriver, false},
		{"exit 1 with a panic text", exit("1"), inGRPC, false},
		{"exit 2 without a panic", exit("2"), "usage: driver\n", false},
	} {
		line, got := goPanic(c.err, c.stderr)
		if got != c.want || (got && !strings.HasPrefix(line, "panic: runtime error")) {
			t.Errorf("%s: goPanic = %q, %v; want %v", c.name, line, got, c.want)
		}
	}
}
