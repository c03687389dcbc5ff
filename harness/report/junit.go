package report

import (
	"cmp"
	"encoding/xml"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/verdict"
)

// JUnit XML: one testsuite per document, one testcase per check, spec,
// mode and implementation, its class "<impl>.<mode>.<doc>.<spec>" and its
// test name "<requirement> · <check>"; a run's wall time is shared among
// its testcases. A fail is a failure (its message names its kind), an error an
// error, inconclusive and not-applicable skipped, each with the evidence.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Time     string      `xml:"time,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
	seconds  time.Duration
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the results of runs to path as JUnit XML, atomically.
func WriteJUnit(path string, runs []Run) error {
	b, err := xml.MarshalIndent(junit(runs), "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".junit-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append([]byte(xml.Header), b...)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// junit groups the results of runs into one testsuite per document,
// ordered by document, the testcases in the order of the runs.
func junit(runs []Run) junitSuites {
	byDoc := map[string]*junitSuite{}
	var docs []string
	for _, run := range runs {
		for _, r := range run.Results {
			s := byDoc[r.Doc]
			if s == nil {
				s = &junitSuite{Name: r.Doc}
				byDoc[r.Doc] = s
				docs = append(docs, r.Doc)
			}
			s.add(run, r)
		}
	}
	var all junitSuites
	sort.Strings(docs)
	for _, d := range docs {
		all.Suites = append(all.Suites, *byDoc[d])
	}
	return all
}

// add adds r's testcase, of run, to s and counts it.
func (s *junitSuite) add(run Run, r verdict.Result) {
	impl := cmp.Or(run.Impl, "reference")
	took := run.Took / time.Duration(max(1, len(run.Results)))
	c := junitCase{Name: r.Row(), Time: seconds(took),
		Classname: strings.Join([]string{impl, string(r.Mode), strings.ToLower(r.Doc), r.Spec}, ".")}
	s.seconds += took
	msg := &junitMessage{Message: firstLine(r.Evidence), Body: r.Evidence}
	switch r.Verdict {
	case verdict.Fail:
		msg.Message = r.Label() + ": " + msg.Message
		c.Failure, s.Failures = msg, s.Failures+1
	case verdict.Error:
		c.Error, s.Errors = msg, s.Errors+1
	case verdict.Inconclusive, verdict.NotApplicable:
		msg.Message = string(r.Verdict) + ": " + msg.Message
		c.Skipped, s.Skipped = msg, s.Skipped+1
	}
	s.Tests++
	s.Time = seconds(s.seconds)
	s.Cases = append(s.Cases, c)
}

// seconds is d as JUnit's time attribute.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
