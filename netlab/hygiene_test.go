package netlab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// rootState is what the root namespace looks like: links, addresses,
// routes, nftables tables and the sysctl the lab sets in its switch
// namespace, as text so that two states compare with ==.
func rootState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatalf("listing root links: %v", err)
	}
	for _, l := range links {
		a := l.Attrs()
		fmt.Fprintf(&b, "link %d %s %s %v\n", a.Index, a.Name, l.Type(), a.Flags)
	}
	addrs, _ := netlink.AddrList(nil, netlink.FAMILY_ALL)
	for _, a := range addrs {
		fmt.Fprintf(&b, "addr %d %s\n", a.LinkIndex, a.IPNet)
	}
	routes, _ := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	for _, r := range routes {
		fmt.Fprintf(&b, "route %s\n", r)
	}
	v, err := os.ReadFile("/proc/sys/net/ipv6/conf/default/disable_ipv6")
	if err != nil {
		t.Fatalf("reading a root sysctl: %v", err)
	}
	fmt.Fprintf(&b, "sysctl net.ipv6.conf.default.disable_ipv6 %s", v)
	if conn, err := nftables.New(); err == nil {
		tables, err := conn.ListTables()
		if err != nil {
			t.Fatalf("listing root nftables tables: %v", err)
		}
		for _, tb := range tables {
			rules := 0
			chains, _ := conn.ListChainsOfTableFamily(tb.Family)
			for _, c := range chains {
				if c.Table.Name == tb.Name {
					rs, _ := conn.GetRules(tb, c)
					rules += len(rs)
				}
			}
			fmt.Fprintf(&b, "nft table %d %s rules %d\n", tb.Family, tb.Name, rules)
		}
	}
	return b.String()
}

// netNamespacesHeld lists the network namespaces this process's threads and
// file descriptors refer to (other than through sockets).
func netNamespacesHeld(t *testing.T) []string {
	t.Helper()
	var held []string
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "net:") {
			held = append(held, "fd "+l)
		}
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
	for _, tk := range tasks {
		if l, err := os.Readlink(tk); err == nil {
			held = append(held, "thread "+l)
		}
	}
	slices.Sort(held)
	return slices.Compact(held)
}

// hygiene records the process and root-namespace state now and returns a
// function that fails the test if it has not returned to it.
func hygiene(t *testing.T) func() {
	t.Helper()
	root, held, goroutines := rootState(t), netNamespacesHeld(t), runtime.NumGoroutine()
	return func() {
		t.Helper()
		if after := rootState(t); after != root {
			t.Errorf("root namespace changed:\nbefore:\n%s\nafter:\n%s", root, after)
		}
		if after := netNamespacesHeld(t); !slices.Equal(after, held) {
			t.Errorf("network namespaces still held: before %v, after %v", held, after)
		}
		// Goroutines end asynchronously after Close returns (grpc-go's
		// transports): poll until the count is back, up to a deadline.
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
			runtime.Gosched()
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > goroutines {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines leaked:\n%s", n-goroutines, buf[:runtime.Stack(buf, true)])
		}
	}
}

// TestLab_CloseLeavesNothing verifies that after Close no namespace, veth,
// rule, process or goroutine of the lab is left, and the root namespace is as
// it was.
func TestLab_CloseLeavesNothing(t *testing.T) {
	requireRoot(t)
	check := hygiene(t)
	l, err := Start(context.Background(), Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2"}}, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	ap := l.Backend("b1").Addrs()[1]
	if err := l.SetFault(ap, FaultDrop); err != nil {
		t.Fatal(err)
	}
	p, err := l.StartProcess("client0", exec.Command("sleep", "600"))
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if alive(pid) {
		t.Errorf("process %d started in the lab survived Close", pid)
	}
	check()
}

// TestLab_PanicInSpecLeavesNothing verifies that a deferred Close cleans up
// after a panic.
func TestLab_PanicInSpecLeavesNothing(t *testing.T) {
	requireRoot(t)
	check := hygiene(t)
	func() {
		defer func() {
			if r := recover(); r != "spec failed" {
				t.Fatalf("recovered %v", r)
			}
		}()
		l, err := Start(context.Background(), Config{Backends: []BackendConfig{{Name: "b1"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		panic("spec failed")
	}()
	check()
}

// TestLab_StartErrorLeavesNothing verifies that a Start that fails part way
// (a context cancelled while hosts are being created) cleans up.
func TestLab_StartErrorLeavesNothing(t *testing.T) {
	requireRoot(t)
	check := hygiene(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2"}}}); err == nil {
		t.Fatal("Start with a cancelled context succeeded")
	}
	check()
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie (state Z) has exited; only its parent's reaping is pending.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

const holderEnv = "CONFORM_TEST_LAB_HOLDER"

// TestLab_SignalToHolderLeavesNothing verifies that a process holding a lab
// leaves no process or root-namespace change behind when it gets SIGINT (and
// closes the lab) or SIGKILL (and cannot).
func TestLab_SignalToHolderLeavesNothing(t *testing.T) {
	requireRoot(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			root := rootState(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestLabHolderProcess$")
			cmd.Env = append(os.Environ(), holderEnv+"=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				cmd.Process.Kill()
				t.Fatalf("holder did not report ready: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
			if err != nil {
				t.Fatalf("holder said %q", line)
			}
			if !alive(pid) {
				t.Fatalf("the lab process %d is not running before the signal", pid)
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			waitGone(t, pid)
			if after := rootState(t); after != root {
				t.Errorf("root namespace changed:\nbefore:\n%s\nafter:\n%s", root, after)
			}
		})
	}
}

// waitGone waits for pid to exit: after SIGKILL to its parent, the kernel
// delivers Pdeathsig asynchronously.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d started in the lab outlived its holder", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLabHolderProcess is not a test: it is the child of
// TestLab_SignalToHolderLeavesNothing, holding a lab with a process in it.
func TestLabHolderProcess(t *testing.T) {
	if os.Getenv(holderEnv) == "" {
		t.Skip("helper process for TestLab_SignalToHolderLeavesNothing")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	l, err := Start(ctx, Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2"}}, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p, err := l.StartProcess("client0", exec.Command("sleep", "600"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ready %d\n", p.Pid())
	<-ctx.Done()
}
