package driver

import (
	"context"
	"errors"
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
			p, err := startFake(lab, Command{Path: drivertest.Script(t, hello+c.exit)}, &pid)
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
