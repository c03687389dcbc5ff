package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/verdict"
)

// minors are grpc-go v1.55.0 … v1.85.0, one per minor.
func minors() []driver.Release {
	var out []driver.Release
	for m := 55; m <= 85; m++ {
		out = append(out, driver.Release{Name: driver.GRPCGo, Version: fmt.Sprintf("v1.%d.0", m)})
	}
	return out
}

// fakeProber gives verdicts by minor version and counts the runs.
func fakeProber(at func(minor int) verdict.Verdict, runs *[]string) prober {
	return func(_ context.Context, r driver.Release) probe {
		var minor int
		fmt.Sscanf(r.Version, "v1.%d.0", &minor)
		*runs = append(*runs, r.Version)
		v := at(minor)
		return probe{verdict: v, label: string(v), evidence: "evidence at " + r.Version}
	}
}

// TestBisect_FindsTheChange verifies the search on 31 releases where the
// verdict changes at v1.64.0: the pair, and about log2(31)+2 runs.
func TestBisect_FindsTheChange(t *testing.T) {
	for _, change := range []int{56, 64, 85} {
		var runs []string
		var out bytes.Buffer
		try := fakeProber(func(m int) verdict.Verdict {
			if m >= change {
				return verdict.Pass
			}
			return verdict.Fail
		}, &runs)
		res, err := bisect(context.Background(), minors(), try, &out)
		if err != nil {
			t.Fatal(err)
		}
		rs := minors()
		if rs[res.last].Version != fmt.Sprintf("v1.%d.0", change-1) || rs[res.first].Version != fmt.Sprintf("v1.%d.0", change) {
			t.Errorf("change at %d: got %v / %v\n%s", change, rs[res.last], rs[res.first], out.String())
		}
		want := fmt.Sprintf("last bad grpc-go@v1.%d.0 (fail) / first good grpc-go@v1.%d.0 (pass)", change-1, change)
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
		if len(runs) > 7 {
			t.Errorf("change at %d: %d runs (%v), want at most 7 for 31 releases", change, len(runs), runs)
		}
	}
}

// TestBisect_StepsOverAnInconclusiveRelease verifies that a release that
// gives no verdict is never taken for good or bad: its neighbour is tried,
// and the pair is still exact.
func TestBisect_StepsOverAnInconclusiveRelease(t *testing.T) {
	var runs []string
	var out bytes.Buffer
	try := fakeProber(func(m int) verdict.Verdict {
		switch {
		case m == 70 || m == 71 || m == 55:
			return verdict.Inconclusive
		case m >= 72:
			return verdict.Fail
		}
		return verdict.Pass
	}, &runs)
	res, err := bisect(context.Background(), minors(), try, &out)
	if err != nil {
		t.Fatal(err)
	}
	rs := minors()
	if rs[res.last].Version != "v1.69.0" || rs[res.first].Version != "v1.72.0" {
		t.Errorf("got %v / %v, want v1.69.0 / v1.72.0 (v1.70, v1.71 say nothing)\n%s", rs[res.last], rs[res.first], out.String())
	}
	if n := strings.Count(out.String(), "v1.70.0 says nothing"); n != 1 {
		t.Errorf("v1.70.0 said nothing %d times, want once:\n%s", n, out.String())
	}
	for _, want := range []string{"v1.55.0 says nothing (inconclusive): passed over, never taken for good or bad", "last good grpc-go@v1.69.0 (pass) / first bad grpc-go@v1.72.0 (fail)",
		"the releases between (v1.70.0, v1.71.0) gave no verdict"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestBisect_SameVerdictAtBothEndsWarns verifies the warning, and that no
// pair is claimed.
func TestBisect_SameVerdictAtBothEndsWarns(t *testing.T) {
	var runs []string
	var out bytes.Buffer
	try := fakeProber(func(m int) verdict.Verdict { return verdict.Pass }, &runs)
	res, err := bisect(context.Background(), minors(), try, &out)
	if err != nil || res.first != -1 || !strings.Contains(out.String(), "warning: v1.55.0 and v1.85.0 both give pass") || len(runs) != 2 {
		t.Errorf("got %+v, %v after %d runs:\n%s", res, err, len(runs), out.String())
	}
}

func TestBisect_NothingJudgedIsAnError(t *testing.T) {
	var runs []string
	try := fakeProber(func(int) verdict.Verdict { return verdict.Error }, &runs)
	_, err := bisect(context.Background(), minors()[:4], try, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no release of the range gave a verdict") || len(runs) != 4 {
		t.Errorf("got %v after %v", err, runs)
	}
}

// TestJudge_WorstOrOneRequirement verifies what a release's verdict is.
func TestJudge_WorstOrOneRequirement(t *testing.T) {
	rs := []verdict.Result{
		{Requirement: "A", Verdict: verdict.Pass},
		{Requirement: "B", Verdict: verdict.Fail, Kind: verdict.Absent, Evidence: "no SYN"},
		{Requirement: "C", Verdict: verdict.Inconclusive, Evidence: "stalled"},
	}
	if p := judge(rs, ""); p.verdict != verdict.Fail || p.label != "fail (absent)" || p.evidence != "B: no SYN" {
		t.Errorf("worst: %+v", p)
	}
	if p := judge(rs, "A"); p.verdict != verdict.Pass {
		t.Errorf("A: %+v", p)
	}
	if p := judge(rs, "C"); p.judged() {
		t.Errorf("C: %+v is judged", p)
	}
	if p := judge(rs, "D"); p.verdict != verdict.Error {
		t.Errorf("D: %+v", p)
	}
}

func TestBisect_UsageErrors(t *testing.T) {
	for args, want := range map[string]string{
		"--impl grpc-go@v1.85.0 --spec a61/he-dropped-ipv6":                          "want a range of releases",
		"--impl grpc-go@v1.55.0..v1.85.0":                                            "give one of --spec SUITE/SPEC, --scenario FILE or --field FILE",
		"--impl grpc-go@v1.55.0..v1.85.0 --spec a61/nope":                            `suite a61 has no such spec (it has: `,
		"--impl grpc-go@v1.55.0..v1.85.0 --spec he-dropped-ipv6":                     "want SUITE/SPEC",
		"--impl grpc-go@v1.55.0..v1.85.0 --spec a61/he-dropped-ipv6 --requirement X": "--requirement X: a61/he-dropped-ipv6 checks A61-",
	} {
		var out, errw bytes.Buffer
		err := run(context.Background(), append([]string{"bisect"}, strings.Fields(args)...), &out, &errw)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a usage error with %q", args, err, want)
		}
	}
}

// TestUnsteady_OnlyAStallIsRunAgain verifies which inconclusive verdicts
// make bisect run a release again: a stall of the machine near the timer
// judged (of the requirement bisected, when one is given), not a
// precondition the client's behaviour left unmet.
func TestUnsteady_OnlyAStallIsRunAgain(t *testing.T) {
	stalled := verdict.Result{Requirement: "A", Verdict: verdict.Inconclusive, Evidence: "the machine stalled 12.5ms at +190.5ms"}
	unmet := verdict.Result{Requirement: "B", Verdict: verdict.Inconclusive, Evidence: "no RPC was sent"}
	pass := verdict.Result{Requirement: "C", Verdict: verdict.Pass}
	for _, c := range []struct {
		rs   []verdict.Result
		req  string
		want bool
	}{
		{[]verdict.Result{stalled, pass}, "", true},
		{[]verdict.Result{stalled, unmet}, "", false},
		{[]verdict.Result{stalled, unmet}, "A", true},
		{[]verdict.Result{unmet, pass}, "B", false},
		{[]verdict.Result{pass}, "C", false},
	} {
		if got := unsteady(judge(c.rs, c.req), c.rs, c.req); got != c.want {
			t.Errorf("%v (requirement %q): unsteady %v, want %v", c.rs, c.req, got, c.want)
		}
	}
}
