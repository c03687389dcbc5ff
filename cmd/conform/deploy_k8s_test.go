package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDeploy_KubernetesManifestsAreValidObjects decodes every document of
// deploy/kubernetes strictly into the Kubernetes API's own types (k8s.io/api):
// a misspelt or misplaced field, or a value of the wrong type, is an error
// here rather than on a cluster (no cluster runs in CI). Then the rules the
// API server applies that the types cannot say: a Job's pods restart Never
// or OnFailure, backoffLimitPerIndex needs an Indexed Job, completions are
// set for one, every volume a container mounts is one of the pod's, and a
// Job's results volume names the claim the file defines.
func TestDeploy_KubernetesManifestsAreValidObjects(t *testing.T) {
	claims := map[string]bool{}
	var jobs []*batchv1.Job
	for _, f := range []string{"../../deploy/kubernetes/verify-job.yaml", "../../deploy/kubernetes/merge-job.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var meta struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			switch meta.Kind {
			case "Job":
				var j batchv1.Job
				if err := yaml.UnmarshalStrict(doc, &j); err != nil {
					t.Errorf("%s, document %d (Job): %v", f, i+1, err)
					continue
				}
				jobs = append(jobs, &j)
			case "PersistentVolumeClaim":
				var c corev1.PersistentVolumeClaim
				if err := yaml.UnmarshalStrict(doc, &c); err != nil {
					t.Errorf("%s, document %d (PersistentVolumeClaim): %v", f, i+1, err)
					continue
				}
				claims[c.Name] = true
			default:
				t.Errorf("%s, document %d: kind %q, want Job or PersistentVolumeClaim", f, i+1, meta.Kind)
			}
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("%d Jobs, want verify's and merge's", len(jobs))
	}
	for _, j := range jobs {
		checkJob(t, j, claims)
	}
}

// checkJob applies to j the API server's Job and pod rules the types
// leave out.
func checkJob(t *testing.T, j *batchv1.Job, claims map[string]bool) {
	t.Helper()
	pod := j.Spec.Template.Spec
	if p := pod.RestartPolicy; p != corev1.RestartPolicyNever && p != corev1.RestartPolicyOnFailure {
		t.Errorf("Job %s: restartPolicy %q, want Never or OnFailure", j.Name, p)
	}
	indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	if j.Spec.BackoffLimitPerIndex != nil && !indexed {
		t.Errorf("Job %s: backoffLimitPerIndex without completionMode Indexed", j.Name)
	}
	if indexed && j.Spec.Completions == nil {
		t.Errorf("Job %s: an Indexed Job without completions", j.Name)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range pod.Containers {
		if c.Image == "" || len(c.Command) == 0 {
			t.Errorf("Job %s, container %s: no image or command", j.Name, c.Name)
		}
		for _, m := range c.VolumeMounts {
			v, ok := volumes[m.Name]
			if !ok {
				t.Errorf("Job %s, container %s: mounts %q, which is not one of the pod's volumes", j.Name, c.Name, m.Name)
				continue
			}
			if pvc := v.PersistentVolumeClaim; pvc != nil && !claims[pvc.ClaimName] {
				t.Errorf("Job %s: volume %s claims %q, which deploy/kubernetes does not define", j.Name, v.Name, pvc.ClaimName)
			}
			if m.MountPath == "/results" && !strings.Contains(strings.Join(c.Args, " "), "/results/") {
				t.Errorf("Job %s, container %s: /results is mounted but its command never writes or reads there", j.Name, c.Name)
			}
		}
	}
}
