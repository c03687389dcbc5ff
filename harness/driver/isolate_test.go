package driver

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestIsolate_NoNetwork verifies that a command Isolate prepares sees no
// network interface but its own loopback.
func TestIsolate_NoNetwork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("driver: isolating a command in a network namespace needs root")
	}
	c := exec.Command("cat", "/proc/net/dev")
	Isolate(c)
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")[2:] // two header lines
	if len(lines) != 1 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "lo:") {
		t.Errorf("interfaces in the isolated namespace:\n%s\nwant the loopback alone", out)
	}
}
