package python

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/netlab/dns"
)

func TestMain(m *testing.M) {
	runtime.LockOSThread() // DESIGN.md: the main goroutine stays on the main thread
	os.Exit(m.Run())
}

// driverProc is a running driver.py and its protocol streams.
type driverProc struct {
	t      *testing.T
	proc   *netlab.Process
	stdin  io.WriteCloser
	lines  chan map[string]any // every line the driver wrote, parsed
	stderr *tailBuffer
	nextID int
	seen   []map[string]any // every line read, for failure messages
	unread []map[string]any // lines read but not yet matched by waitFor
}

// startDriver runs driver.py with the system python inside client0, with
// env added to the test's environment.
func startDriver(t *testing.T, lab *netlab.Lab, env ...string) *driverProc {
	t.Helper()
	cmd := Command("driver.py")
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &driverProc{t: t, stdin: stdin, lines: make(chan map[string]any, 1024), stderr: &tailBuffer{}}
	cmd.Stderr = d.stderr
	if d.proc, err = lab.StartProcess("client0", cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.proc.Kill()
		if t.Failed() {
			t.Logf("driver stderr (tail):\n%s", d.stderr)
		}
	})
	go func() {
		defer close(d.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"ev": "not-json", "line": sc.Text()}
			}
			d.lines <- m
		}
	}()
	return d
}

// send writes one command with the next id and returns the id.
func (d *driverProc) send(cmd map[string]any) int {
	d.t.Helper()
	d.nextID++
	cmd["id"] = d.nextID
	b, _ := json.Marshal(cmd)
	if _, err := d.stdin.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("writing to the driver: %v", err)
	}
	return d.nextID
}

// waitFor returns (and consumes) the first line not yet consumed for which
// match is true, failing the test after timeout.
func (d *driverProc) waitFor(what string, timeout time.Duration, match func(map[string]any) bool) map[string]any {
	d.t.Helper()
	for i, m := range d.unread {
		if match(m) {
			d.unread = append(d.unread[:i], d.unread[i+1:]...)
			return m
		}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-d.lines:
			if !ok {
				d.t.Fatalf("driver exited while waiting for %s; lines: %v", what, d.seen)
			}
			d.seen = append(d.seen, m)
			if m["ev"] == "not-json" {
				d.t.Errorf("driver wrote a line that is not JSON: %q", m["line"])
			}
			if match(m) {
				return m
			}
			d.unread = append(d.unread, m)
		case <-timer.C:
			d.t.Fatalf("no %s within %v; lines: %v", what, timeout, d.seen)
		}
	}
}

// call sends a command and waits for its reply, which must be ok.
func (d *driverProc) call(cmd map[string]any, timeout time.Duration) map[string]any {
	d.t.Helper()
	id := d.send(cmd)
	r := d.waitFor(fmt.Sprintf("reply to %v", cmd["op"]), timeout, func(m map[string]any) bool { return m["id"] == float64(id) })
	if r["ev"] != "ok" {
		d.t.Fatalf("%v: %v", cmd["op"], r)
	}
	return r
}

// closeAndWait sends close and checks that the driver then exits 0.
func (d *driverProc) closeAndWait(timeout time.Duration) {
	d.t.Helper()
	d.call(map[string]any{"op": "close"}, timeout)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for open := true; open; {
		select {
		case m, ok := <-d.lines:
			if open = ok; ok {
				d.seen = append(d.seen, m)
			}
		case <-timer.C:
			d.t.Fatalf("driver still running %v after close", timeout)
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- d.proc.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			d.t.Errorf("driver exit after close: %v, want status 0", err)
		}
	case <-timer.C:
		d.t.Fatalf("driver closed stdout but did not exit within %v", timeout)
	}
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = t.b[len(t.b)-16<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// requireLabAndGRPCIO skips, with the reason, when the lab or grpcio is
// missing.
func requireLabAndGRPCIO(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("python driver lab test: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := Check(ctx)
	if err != nil {
		t.Skip(err.Error())
	}
	return v
}

func startLab(t *testing.T) (*netlab.Lab, *dns.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := netlab.Start(ctx, netlab.Config{
		Backends: []netlab.BackendConfig{{Name: "b1"}, {Name: "b2"}},
		Capture:  true,
	})
	if err != nil {
		t.Fatalf("netlab.Start: %v", err)
	}
	t.Cleanup(func() { lab.Close() })
	srv := dns.New(dns.WithClock(lab.Now))
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("dns: Close: %v", err)
		}
	})
	if _, err := srv.ListenIn(lab, "client0"); err != nil {
		t.Fatal(err)
	}
	return lab, srv
}

func mustAddr(t *testing.T, lab *netlab.Lab, name string, fam netlab.Family) netip.AddrPort {
	t.Helper()
	ap, err := lab.Addr(name, fam)
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// TestPythonDriver_DNS_MixedFamilies_IPv4WhenIPv6Dropped: through the lab
// DNS (dns:// target with an authority), C-core gets both backends' IPv4 and
// IPv6 addresses; with b1's IPv6 address dropping SYNs, round_robin RPCs still
// succeed, b1 answering only over IPv4, and the DNS server saw the A and AAAA
// queries.
func TestPythonDriver_DNS_MixedFamilies_IPv4WhenIPv6Dropped(t *testing.T) {
	version := requireLabAndGRPCIO(t)
	lab, srv := startLab(t)
	b1v4, b1v6 := mustAddr(t, lab, "b1", netlab.IPv4), mustAddr(t, lab, "b1", netlab.IPv6)
	b2v4, b2v6 := mustAddr(t, lab, "b2", netlab.IPv4), mustAddr(t, lab, "b2", netlab.IPv6) // b2 healthy in both families
	if err := srv.Set("svc.conform", []netip.Addr{b1v6.Addr(), b1v4.Addr(), b2v6.Addr(), b2v4.Addr()}, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := lab.SetFault(b1v6, netlab.FaultDrop); err != nil {
		t.Fatal(err)
	}

	d := startDriver(t, lab)
	hello := d.call(map[string]any{"op": "hello"}, 10*time.Second)["hello"].(map[string]any)
	if hello["impl"] != "grpcio" || hello["version"] != version || hello["protocol"] != float64(1) {
		t.Fatalf("hello = %v, want grpcio %s protocol 1", hello, version)
	}
	if can := hello["can"].(map[string]any); can["endpoints"] != false || can["mixed_families"] != true {
		t.Errorf("hello can = %v, want endpoints false, mixed_families true", can)
	}

	target := dns.Target("svc.conform", lab.Port())
	d.call(map[string]any{"op": "create", "target": target,
		"service_config": `{"loadBalancingConfig":[{"round_robin":{}}]}`}, 10*time.Second)
	d.waitFor("first channel-state", 10*time.Second, func(m map[string]any) bool { return m["ev"] == "channel-state" })

	// round_robin picks among READY subchannels, so the first RPCs may all
	// go to whichever connected first: call one at a time until both
	// backends answered (bounded), every call succeeding.
	const maxRPCs = 200
	answered := map[string]int{}
	start := lab.Now()
	n := 0
	for ; n < maxRPCs && (answered["b1"] == 0 || answered["b2"] == 0); n++ {
		d.call(map[string]any{"op": "rpc", "rpc": fmt.Sprintf("r%d", n), "method": netlab.NameMethod,
			"wait_for_ready": true, "deadline_ms": 10000, "metadata": map[string]string{"x-conform-test": "1"}}, 10*time.Second)
		r := d.waitFor("rpc-result", 15*time.Second, func(m map[string]any) bool { return m["ev"] == "rpc-result" })
		if r["code"] != "OK" {
			t.Fatalf("rpc %v: %v %v", r["rpc"], r["code"], r["err"])
		}
		b, _ := r["backend"].(string)
		answered[b]++
	}
	t.Logf("grpcio %s: %d RPCs answered by %v in %v", version, n, answered, lab.Now()-start)
	if answered["b1"] == 0 || answered["b2"] == 0 || answered["b1"]+answered["b2"] != n {
		t.Errorf("answered by %v after %d RPCs, want both b1 and b2 and nothing else", answered, n)
	}

	// Served over IPv4 only at b1: its IPv6 address never got a connection.
	servedB1 := map[netip.AddrPort]int{}
	for _, e := range lab.Events() {
		if e.Kind == netlab.EventRPC && e.Backend == "b1" {
			servedB1[e.Addr]++
		}
		if e.Kind == netlab.EventAccept && e.Addr == b1v6 {
			t.Errorf("b1's dropped IPv6 address accepted a connection: %v", e)
		}
	}
	if servedB1[b1v4] == 0 || len(servedB1) != 1 {
		t.Errorf("b1 served RPCs on %v, want only %s", servedB1, b1v4)
	}
	// Both families reached C-core through DNS: it tried the dropped IPv6 address.
	synV6 := 0
	for _, e := range lab.Events() {
		if e.Kind == netlab.EventSYN && e.Addr == b1v6 {
			synV6++
		}
	}
	if synV6 == 0 {
		t.Errorf("no SYN to %s: the IPv6 addresses did not reach the channel", b1v6)
	}

	// The DNS server saw the channel's A and AAAA queries, from the client's namespace.
	types := map[dns.Type]bool{}
	for _, q := range srv.Queries() {
		if q.Name == "svc.conform" && q.RCode == dns.RCodeSuccess && q.Answers == 2 {
			types[q.Type] = true
		}
		if !q.From.IsValid() {
			t.Errorf("query without a client address: %v", q)
		}
	}
	if !types[dns.TypeA] || !types[dns.TypeAAAA] {
		t.Errorf("DNS queries %v: want answered A and AAAA queries for svc.conform", srv.Queries())
	}

	d.closeAndWait(10 * time.Second)
}
