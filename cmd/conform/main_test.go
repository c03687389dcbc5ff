package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// TestHelp_TeachesTheCommands verifies that help lists every command and how
// to start.
func TestHelp_TeachesTheCommands(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lab", "conform lab check", "conform lab demo", "root"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help does not mention %q:\n%s", want, out.String())
		}
	}
}

// TestUnknownCommand_IsAnErrorWithUsage verifies a typo gets usage and an error.
func TestUnknownCommand_IsAnErrorWithUsage(t *testing.T) {
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"lba"}, &out, &errw)
	if err == nil || !strings.Contains(err.Error(), `"lba"`) || !strings.Contains(errw.String(), "Commands:") {
		t.Errorf("err %v, stderr %q", err, errw.String())
	}
}

// TestLabCheck_JSONMatchesExitStatus verifies that `lab check --json` prints
// every check and fails exactly when one failed.
func TestLabCheck_JSONMatchesExitStatus(t *testing.T) {
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"lab", "check", "--json"}, &out, &errw)
	var checks []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &checks); jerr != nil || len(checks) == 0 {
		t.Fatalf("output is not a list of checks: %v\n%s", jerr, out.String())
	}
	if err := validateReport(t, "lab_check", out.Bytes()); err != nil {
		t.Errorf("lab check --json does not validate against its schema: %v\n%s", err, out.String())
	}
	allOK := true
	for _, c := range checks {
		allOK = allOK && c.OK
	}
	var ee exitError
	if allOK != (err == nil) || (err != nil && !errors.As(err, &ee)) {
		t.Errorf("all checks ok = %v but run returned %v", allOK, err)
	}
	if os.Geteuid() == 0 && !allOK {
		t.Errorf("as root every check should pass on this machine kind: %+v", checks)
	}
}

// TestLabDemo_ShowsHappyEyeballs runs the demo end to end and checks that it
// reports the gap between the IPv6 and the IPv4 SYN.
func TestLabDemo_ShowsHappyEyeballs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("lab demo: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"lab", "demo"}, &out, &errw); err != nil {
		t.Fatalf("demo: %v\n%s%s", err, out.String(), errw.String())
	}
	for _, want := range []string{"syn-ack", "rpc-served", "channel-state READY", "The IPv4 SYN followed the unanswered IPv6 SYN by"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRun_SimJSONAndExitStatus verifies `conform run --mode sim --json`
// prints one result per requirement, spec and mode, and exits 0 only when
// every verdict is pass.
func TestRun_SimJSONAndExitStatus(t *testing.T) {
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"run", "--mode", "sim", "--json", "--suite", "a61"}, &out, &errw)
	var rep struct {
		Results []struct{ Requirement, Verdict, Mode string }
		Pass    bool
	}
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || len(rep.Results) == 0 {
		t.Fatalf("not a JSON report: %v\n%s\n%s", jerr, out.String(), errw.String())
	}
	if err := validateReport(t, "run", out.Bytes()); err != nil {
		t.Errorf("run --json does not validate against its schema: %v", err)
	}
	allPass := true
	for _, r := range rep.Results {
		allPass = allPass && r.Verdict == "pass"
		if r.Mode != "sim" {
			t.Errorf("--mode sim ran a %s result: %+v", r.Mode, r)
		}
	}
	if rep.Pass != allPass || (err == nil) != allPass {
		t.Errorf("pass=%v, every verdict pass=%v, run error %v", rep.Pass, allPass, err)
	}
	if !regexp.MustCompile(`\[\s*1/\d+\]`).MatchString(errw.String()) {
		t.Errorf("no progress lines on stderr:\n%s", errw.String())
	}
}

// TestRun_BadFlagsSayWhy verifies unknown suites and bad label filters are
// errors that name the problem.
func TestRun_BadFlagsSayWhy(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--mode", "sim", "--suite", "a99"},
		{"run", "--mode", "sim", "--label-filter", "(("},
		{"run", "--mode", "warp"},
	} {
		var out, errw bytes.Buffer
		err := run(context.Background(), args, &out, &errw)
		if err == nil {
			t.Errorf("%v succeeded", args)
			continue
		}
		if !strings.Contains(err.Error(), args[len(args)-1]) && !strings.Contains(err.Error(), "label-filter") {
			t.Errorf("%v: error %q does not name the bad value", args, err)
		}
	}
}

// TestRequirements_ListsCoveredAndUncovered verifies the catalogue table
// names the specs that check a requirement and marks the rest UNCOVERED.
func TestRequirements_ListsCoveredAndUncovered(t *testing.T) {
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"requirements", "--doc", "a61"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A61-HE-DELAY-DEFAULT", "a61/he-dropped-ipv6", "UNCOVERED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("requirements output lacks %q", want)
		}
	}
}

// TestRequirements_SaysHowEachIsJudged verifies the table shows how each
// requirement is judged, with the reason where it cannot be from outside,
// and counts them per document; and that --json carries the same, with
// counts adding up to the catalogue.
func TestRequirements_SaysHowEachIsJudged(t *testing.T) {
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"requirements", "--doc", "a75"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"judged: black-box", "judged: reference-only", "judged: not-checkable",
		"conform records no client metrics", "BLACK-BOX  REF-ONLY  NOT-CHECKABLE  UNCOVERED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("requirements output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"requirements", "--json"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Requirements []struct {
			ID            string   `json:"id"`
			Judged        string   `json:"judged"`
			JudgedBecause string   `json:"judged_because"`
			CheckedBy     []string `json:"checked_by"`
		} `json:"requirements"`
		All map[string]int `json:"all"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, out.String())
	}
	if len(got.Requirements) == 0 || got.All["total"] != len(got.Requirements) ||
		got.All["black_box"]+got.All["reference_only"]+got.All["not_checkable"]+got.All["uncovered"] != got.All["total"] {
		t.Errorf("--json: %d requirements, counts %v", len(got.Requirements), got.All)
	}
	for _, r := range got.Requirements {
		if r.Judged == "" || (r.Judged != "black-box") != (r.JudgedBecause != "") {
			t.Errorf("--json: %s judged %q because %q", r.ID, r.Judged, r.JudgedBecause)
		}
	}
}

// TestVerify_NeedsAnImplAndSaysWhich verifies verify's argument errors.
func TestVerify_NeedsAnImplAndSaysWhich(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify"}, "--impl"},
		{[]string{"verify", "--impl", "grpc-go"}, "grpc-go@v1.85.0"},
		{[]string{"verify", "--impl", "grpc-rust@1"}, "unknown implementation"},
	} {
		var out, errw bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}

// TestVerify_GRPCGoMatrix runs verify on one grpc-go version and one suite
// in the lab and checks the JSON matrix has a verdict for every requirement
// of the suite's lab specs, none of them an installation error.
func TestVerify_GRPCGoMatrix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("verify: needs root (the lab)")
	}
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"verify", "--impl", "grpc-go@v1.85.0", "--suite", "a61",
		"--label-filter", "A61-HE-DELAY-DEFAULT", "--json"}, &out, &errw)
	var rep struct {
		Impls []struct {
			Impl    string
			Results []struct{ Requirement, Verdict, Evidence string }
		}
	}
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || len(rep.Impls) != 1 {
		t.Fatalf("not a verify report (%v, run error %v):\n%s\n%s", jerr, err, out.String(), errw.String())
	}
	found := false
	for _, r := range rep.Impls[0].Results {
		if r.Verdict == "error" {
			t.Errorf("%s: error: %s", r.Requirement, r.Evidence)
		}
		found = found || r.Requirement == "A61-HE-DELAY-DEFAULT"
	}
	if !found {
		t.Errorf("no verdict for A61-HE-DELAY-DEFAULT in %+v", rep.Impls[0].Results)
	}
}

// TestVerify_OwnGoBalancer judges the worked example, a naive sequential
// pick_first (examples/acme-pickfirst), in the lab as a user would: built
// into the Go driver from its directory, standing in for pick_first. It
// has no Happy Eyeballs timer — its source tries the next address only
// when the current one fails — so with b1's IPv6 address dropping SYNs no
// IPv4 attempt is ever made (he-dropped-ipv6: A61-HE-NOT-GATED's fail, of
// kind absent; the delay's check inconclusive, having no delay to judge),
// while a pass over refusing addresses ends in TRANSIENT_FAILURE only
// after both failed, which it does (he-all-refused: a pass). The same in
// the simulator, in a column of its own, which also judges what only the
// calls between policy and channel show.
func TestVerify_OwnGoBalancer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("verify: needs root (the lab)")
	}
	t.Setenv("CONFORM_CACHE", t.TempDir())
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"verify", "--impl", "go:../../examples/acme-pickfirst", "--policy", "pick_first=acme_pick_first",
		"--suite", "a61", "--label-filter", "A61-HE-DELAY-DEFAULT || A61-HE-NOT-GATED || A61-HE-PASS-ENDS-ALL-FAILED", "--json"}, &out, &errw)
	var rep struct {
		Impls []struct {
			Impl    string
			Results []struct{ Spec, Requirement, Check, Mode, Verdict, Kind, Evidence string }
		}
	}
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || len(rep.Impls) != 2 {
		t.Fatalf("not a verify report with a lab and a simulator column (%v, run error %v):\n%s\n%s", jerr, err, out.String(), errw.String())
	}
	const name = "go:../../examples/acme-pickfirst [pick_first=acme_pick_first]"
	for i, want := range []string{name, name + " (sim)"} {
		if got := rep.Impls[i].Impl; got != want {
			t.Errorf("the report names %q, want %q (the impl as given, with the mapping)", got, want)
		}
	}
	verdicts := map[string]string{}
	for _, impl := range rep.Impls {
		for _, r := range impl.Results {
			if r.Verdict == "error" {
				t.Errorf("%s: %s %s: error: %s", impl.Impl, r.Spec, r.Requirement, r.Evidence)
			}
			if r.Check == "" {
				verdicts[r.Mode+" "+r.Spec+" "+r.Requirement] = strings.TrimSpace(r.Verdict + " " + r.Kind)
			}
		}
	}
	for key, want := range map[string]string{
		// No Happy Eyeballs with no switch set: A61-HE-NOT-GATED's fail;
		// the delay has no value to judge.
		"lab he-dropped-ipv6 A61-HE-NOT-GATED":           "fail absent",
		"lab he-dropped-ipv6 A61-HE-DELAY-DEFAULT":       "inconclusive",
		"lab he-all-refused A61-HE-PASS-ENDS-ALL-FAILED": "pass",
		"sim he-dropped-ipv6 A61-HE-NOT-GATED":           "fail absent",
		"sim he-dropped-ipv6 A61-HE-DELAY-DEFAULT":       "inconclusive",
		"sim he-all-refused A61-HE-PASS-ENDS-ALL-FAILED": "pass",
		// The simulator sees the calls between the policy and its
		// channel: the subchannel that reported IDLE after the pass was
		// shut down, never asked to connect (acmepickfirst.go replaces it).
		"lab he-all-refused A61-HE-AFTER-PASS-IDLE-CONNECTS": "not-applicable",
		"sim he-all-refused A61-HE-AFTER-PASS-IDLE-CONNECTS": "fail deviates",
	} {
		if verdicts[key] != want {
			t.Errorf("%s: %q, want %q (all: %v)", key, verdicts[key], want, verdicts)
		}
	}
}

// TestRequirements_DocFilterKeepsOtherDocumentsOut verifies that a table for
// one document does not list the other documents' checks as unknown labels.
func TestRequirements_DocFilterKeepsOtherDocumentsOut(t *testing.T) {
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"requirements", "--doc", "a56"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "A61-HE-") || strings.Contains(out.String(), "A62-") {
		t.Errorf("the A56 table mentions other documents' requirements:\n%s", out.String())
	}
}

// TestExitStatus_UsageVerdictInterrupt verifies the exit status and the
// message for each way a run ends: a usage error is 2 with its own message
// (not "interrupted"), a failure 1, an explicit status as it is, and only a
// real interrupt 130.
func TestExitStatus_UsageVerdictInterrupt(t *testing.T) {
	for _, c := range []struct {
		err         error
		interrupted bool
		code        int
		says        string
	}{
		{nil, false, 0, ""},
		{badUsage("unknown command %q (see conform help)", "frob"), false, 2, `conform: unknown command "frob"`},
		{errors.New("verify runs implementations in the lab"), false, 1, "conform: verify runs"},
		{exitError{1}, false, 1, ""},
		{context.Canceled, true, 130, "interrupted"},
	} {
		var stderr bytes.Buffer
		if got := exitStatus(c.err, c.interrupted, &stderr); got != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("exitStatus(%v, %v) = %d, %q; want %d, %q", c.err, c.interrupted, got, stderr.String(), c.code, c.says)
		}
	}
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"frob"}, &out, &errw)
	if exitStatus(err, false, &errw) != 2 {
		t.Errorf("an unknown command: %v, want a usage error", err)
	}
}

// TestVerify_SimOnlySpecsAreNotApplicable verifies verify lists every spec
// that runs in the simulator only as not-applicable for a third party, with
// the reason, so that the requirements they check are not silently missing.
func TestVerify_SimOnlySpecsAreNotApplicable(t *testing.T) {
	f := &runFlags{suite: "a56"}
	out, err := f.simOnly()
	if err != nil || len(out) == 0 {
		t.Fatalf("simOnly: %d outcomes, %v; want a56's sim-only specs", len(out), err)
	}
	for _, o := range out {
		if o.Spec.RunsIn(spec.Lab) {
			t.Errorf("%s runs in the lab, yet is listed as sim-only", o.Spec.Name())
		}
		for _, r := range o.Results {
			if r.Verdict != verdict.NotApplicable || r.Evidence != simOnlyReason || r.Mode != spec.Lab {
				t.Errorf("%s: %+v, want not-applicable in the lab with the reason", o.Spec.Name(), r)
			}
		}
	}
}

// TestDiff_FirstDivergenceAndExitStatus verifies conform diff: a trace
// agrees with itself (exit 0), two scenarios differ at their first
// divergence (exit 1, the lane and the events printed), and a file that is
// not a trace is a usage error naming it.
func TestDiff_FirstDivergenceAndExitStatus(t *testing.T) {
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	dropped, refused := dir+"/a61/he-dropped-ipv6.sim.jsonl", dir+"/a61/he-refused-ipv6.sim.jsonl"
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"diff", dropped, dropped}, &out, &errw); err != nil || !strings.Contains(out.String(), "traces agree") {
		t.Errorf("a trace against itself: %v, %q", err, out.String())
	}
	out.Reset()
	err = run(context.Background(), []string{"diff", dropped, refused}, &out, &errw)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(out.String(), "first divergence") || !strings.Contains(out.String(), "drop") {
		t.Errorf("two scenarios: %v, %q; want exit 1 and the divergence", err, out.String())
	}
	err = run(context.Background(), []string{"diff", dropped, "main.go"}, &out, &errw)
	if exitStatus(err, false, &errw) != 2 || !strings.Contains(err.Error(), "main.go") {
		t.Errorf("a file that is not a trace: %v, want a usage error naming it", err)
	}
}

// TestTry_RunsAScenarioFileAndWritesItsTrace verifies conform try on a
// user's scenario file, in the simulator: the run's trace is written where
// --out says, and a scenario file with a mistake is a usage error naming
// its file and line.
func TestTry_RunsAScenarioFileAndWritesItsTrace(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"try", "--mode", "sim", "--out", out, "../../harness/scenario/testdata/he-dropped-ipv6-ok.yaml"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("try: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	tr, err := trace.ReadFile(out + "/he-dropped-ipv6.reference.sim.jsonl")
	if err != nil || len(tr.Events) == 0 || !strings.Contains(stdout.String(), "he-dropped-ipv6 (reference, sim)") {
		t.Fatalf("trace %v, output %q", err, stdout.String())
	}
	if tr.Header.Origin != trace.OriginScenario || !tr.Header.Has(trace.EvidencePolicy) || tr.Header.Has(trace.EvidenceBackends) {
		t.Errorf("the trace of a user's scenario in the simulator says origin %q, shows %v", tr.Header.Origin, tr.Header.Shows)
	}
	err = run(context.Background(), []string{"try", "--mode", "sim", "--out", out, "../../harness/scenario/testdata/env-bad-unknown-variable.yaml"}, &stdout, &stderr)
	if exitStatus(err, false, &stderr) != 2 || !strings.Contains(err.Error(), "env-bad-unknown-variable.yaml:7") {
		t.Errorf("a bad scenario file: %v, want a usage error at its file:line", err)
	}
}

// TestCache_ListAndClean verifies conform cache lists the cache directory
// ($CONFORM_CACHE) and cache clean empties it.
func TestCache_ListAndClean(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CONFORM_CACHE", dir)
	if err := os.MkdirAll(dir+"/grpc-go@v1.85.0", 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"cache"}, &out, &errw); err != nil || !strings.Contains(out.String(), "grpc-go@v1.85.0") {
		t.Errorf("cache: %v, %q", err, out.String())
	}
	if err := run(context.Background(), []string{"cache", "clean"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("after clean: %d entries left", len(entries))
	}
}

// TestRun_HTMLReport verifies conform run --html writes the report page of
// the reference's runs.
func TestRun_HTMLReport(t *testing.T) {
	dir := t.TempDir()
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"run", "--mode", "sim", "--suite", "a62", "--html", dir}, &out, &errw); err != nil {
		t.Fatalf("run --html: %v\n%s", err, errw.String())
	}
	page, err := os.ReadFile(dir + "/index.html")
	if err != nil || !strings.Contains(string(page), "conform run") || !strings.Contains(string(page), "A62-STICKY-TF") {
		t.Errorf("the page (%v) lacks the title or the rows", err)
	}
}

// validateReport validates doc against a definition of the JSON reports'
// schema (harness/report/report.schema.json).
func validateReport(t *testing.T, def string, doc []byte) error {
	t.Helper()
	f, err := os.Open("../../harness/report/report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schema, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	id := schema.(map[string]any)["$id"].(string)
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, schema); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id + "#/$defs/" + def)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(v)
}
