package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, d)
	}
}

// at walks a decoded YAML document by keys and list indices.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not a mapping", path, v)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: %T has no item %d", path, v, k)
			}
			v = l[k]
		}
	}
	return v
}

// TestDeploy_YAMLParses verifies every YAML file under deploy/ parses.
func TestDeploy_YAMLParses(t *testing.T) {
	files, _ := filepath.Glob("../../deploy/*/*.y*ml")
	if len(files) < 3 {
		t.Fatalf("deploy/: %d YAML files, want the Kubernetes jobs and the CI matrix", len(files))
	}
	for _, f := range files {
		if docs := yamlDocs(t, f); len(docs) == 0 {
			t.Errorf("%s: no document", f)
		}
	}
}

// TestDeploy_IndexedJobRunsEachShardOnce verifies the Kubernetes Job: an
// Indexed Job of privileged pods, as many completions as shards, and a
// command line that verify takes for every index, the shards counted
// from 1 and each writing its own results file.
func TestDeploy_IndexedJobRunsEachShardOnce(t *testing.T) {
	job := yamlDocs(t, "../../deploy/kubernetes/verify-job.yaml")[0]
	if at(t, job, "kind") != "Job" || at(t, job, "spec", "completionMode") != "Indexed" {
		t.Fatalf("not an Indexed Job: %v", job)
	}
	n := at(t, job, "spec", "completions").(int)
	if at(t, job, "spec", "parallelism").(int) != n {
		t.Errorf("parallelism differs from completions (%d)", n)
	}
	c := at(t, job, "spec", "template", "spec", "containers", 0)
	if at(t, c, "securityContext", "privileged") != true {
		t.Error("the pod is not privileged (the lab needs CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_NET_RAW)")
	}
	env := map[string]string{}
	for _, e := range at(t, c, "env").([]any) {
		env[at(t, e, "name").(string)] = at(t, e, "value").(string)
	}
	if env["SHARDS"] != strconv.Itoa(n) {
		t.Errorf("SHARDS=%q, completions %d", env["SHARDS"], n)
	}
	script := at(t, c, "args", 0).(string)
	if !strings.Contains(script, "i=$((JOB_COMPLETION_INDEX + 1))") {
		t.Errorf("the script does not turn JOB_COMPLETION_INDEX into a shard counted from 1:\n%s", script)
	}
	line := verifyLine(t, script)
	results := t.TempDir()
	seen := map[string]bool{}
	for index := 0; index < n; index++ {
		expanded := strings.NewReplacer(`"$i/$SHARDS"`, strconv.Itoa(index+1)+"/"+env["SHARDS"],
			`"/results/results-$i-of-$SHARDS.json"`, filepath.Join(results, "results-"+strconv.Itoa(index+1)+".json")).Replace(line)
		f, err := parseVerifyFlags(strings.Fields(expanded)[2:], io.Discard)
		if err != nil {
			t.Fatalf("index %d: verify refuses %q: %v", index, expanded, err)
		}
		sh, _ := parseShard(f.shard)
		if sh.Count != n || seen[f.results] {
			t.Errorf("index %d: shard %s, results %s", index, sh, f.results)
		}
		seen[f.results] = true
	}
	merge := yamlDocs(t, "../../deploy/kubernetes/merge-job.yaml")[0]
	if m := at(t, merge, "spec", "template", "spec", "containers", 0, "args", 0).(string); !strings.Contains(m, "conform merge") || !strings.Contains(m, "/results/results-*-of-"+env["SHARDS"]+".json") {
		t.Errorf("the merge job does not merge the %s shards' files:\n%s", env["SHARDS"], m)
	}
}

// verifyLine is the conform verify command of a shell script, its
// continuation lines joined.
func verifyLine(t *testing.T, script string) string {
	t.Helper()
	joined := strings.ReplaceAll(script, "\\\n", " ")
	m := regexp.MustCompile(`(?m)^\s*(conform verify .*)$`).FindStringSubmatch(joined)
	if m == nil {
		t.Fatalf("no conform verify command in:\n%s", script)
	}
	return strings.Join(strings.Fields(m[1]), " ")
}

// TestDeploy_CIMatrixCoversEveryShard verifies the GitHub Actions
// workflow: one matrix job per shard 1..SHARDS, then a merge of them all.
func TestDeploy_CIMatrixCoversEveryShard(t *testing.T) {
	wf := yamlDocs(t, "../../deploy/github/verify-matrix.yml")[0]
	n := at(t, wf, "env", "SHARDS").(int)
	shards := at(t, wf, "jobs", "shard", "strategy", "matrix", "shard").([]any)
	if len(shards) != n {
		t.Fatalf("matrix %v for SHARDS=%d", shards, n)
	}
	for i, s := range shards {
		if s.(int) != i+1 {
			t.Errorf("matrix %v: want 1..%d", shards, n)
		}
	}
	var run, merge string
	for _, st := range at(t, wf, "jobs", "shard", "steps").([]any) {
		if r, ok := at(t, st, "run").(string); ok && strings.Contains(r, "verify") {
			run = r
		}
	}
	for _, st := range at(t, wf, "jobs", "merge", "steps").([]any) {
		if r, ok := at(t, st, "run").(string); ok && strings.Contains(r, "merge") {
			merge = r
		}
	}
	if !strings.Contains(run, `--shard "${{ matrix.shard }}/$SHARDS"`) || !strings.Contains(run, "--results") {
		t.Errorf("the shard job does not shard: %s", run)
	}
	if at(t, wf, "jobs", "merge", "needs") != "shard" || !strings.Contains(merge, "results-*-of-$SHARDS.json") {
		t.Errorf("the merge job does not merge every shard: %s", merge)
	}
}
