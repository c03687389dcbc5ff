package driver

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conformlab/conform/netlab"
)

// TestWithResolvConf_OnlyTheDriverSeesTheLabDNS starts a process the way a
// driver resolving through the lab's DNS is started: it reads the lab's
// resolv.conf at /etc/resolv.conf and lists its mounts, while the machine's
// /etc/resolv.conf and mount table stay as they were.
func TestWithResolvConf_OnlyTheDriverSeesTheLabDNS(t *testing.T) {
	requireLab(t)
	before, err := os.ReadFile(systemResolvConf)
	if err != nil {
		t.Skipf("driver: no %s on this machine: %v", systemResolvConf, err)
	}
	mountsBefore := mountsOn(t, systemResolvConf)
	lab, err := netlab.Start(context.Background(), netlab.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	conf, remove, err := writeLabResolvConf()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command("sh", "-c", "cat /etc/resolv.conf; echo ---; grep -c ' /etc/resolv.conf ' /proc/self/mountinfo")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	wrapped, err := withResolvConf(cmd, conf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := lab.StartProcess("client0", wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("the wrapped process failed: %v\n%s", err, errOut.String())
	}
	seen, mounts, _ := strings.Cut(out.String(), "---\n")
	if seen != labResolvConf() {
		t.Errorf("the driver saw /etc/resolv.conf as\n%s\nwant the lab's\n%s", seen, labResolvConf())
	}
	if strings.TrimSpace(mounts) == "0" {
		t.Errorf("the driver's mount table has no mount on /etc/resolv.conf")
	}

	remove()
	if _, err := os.Stat(filepath.Dir(conf)); !os.IsNotExist(err) {
		t.Errorf("the resolv.conf directory %s is left behind (%v)", filepath.Dir(conf), err)
	}
	after, err := os.ReadFile(systemResolvConf)
	if err != nil || !bytes.Equal(after, before) {
		t.Errorf("the machine's %s changed (%v):\n%s", systemResolvConf, err, after)
	}
	if got := mountsOn(t, systemResolvConf); got != mountsBefore {
		t.Errorf("the machine has %d mounts on %s, had %d", got, systemResolvConf, mountsBefore)
	}
}

// mountsOn counts this process's mounts whose mount point is path.
func mountsOn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			n++
		}
	}
	return n
}
