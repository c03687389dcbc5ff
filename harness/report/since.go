package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/conformlab/conform/harness/report/html"

	"github.com/conformlab/conform/harness/verdict"
)

// Since is the "since" view of one implementation verified at several
// releases (a version range): per requirement, the first release that
// passes it and each release at which it regressed. Releases are ordered
// by semantic version, whatever order the matrix has them in.
type Since struct {
	Impl     string     `json:"-"`        // "grpc-go"
	Versions []string   `json:"versions"` // oldest first
	Rows     []SinceRow `json:"requirements"`
}

// SinceRow is one requirement's history over the releases. A release
// judges it when its verdict there is pass or fail; not-applicable,
// inconclusive, error and a missing cell say nothing of it and are
// passed over. It regressed at a release when one of its rows (a check of
// one spec in one mode) fails there and passed at the last release before
// that judged that row: a requirement judged by several specs may pass
// in one release on one spec and fail in the next on another, which is no
// regression of either.
type SinceRow struct {
	Requirement string `json:"requirement"`
	// FirstPass is the oldest release that passes the requirement, nil
	// when none does ("never").
	FirstPass *string `json:"first_pass"`
	// Regressed are the releases at which it regressed, oldest first.
	Regressed []string `json:"regressed"`
	// Unjudged are the releases whose verdict was inconclusive or an
	// error: a first pass after one of them may not be the first.
	Unjudged []string `json:"unjudged"`
	// Verdicts is its verdict at each release, by version ("" where the
	// release has no result for it).
	Verdicts map[string]string `json:"verdicts"`
}

// Since is the since view of every implementation the matrix has at two
// or more releases, in the order the matrix first names them. An
// implementation's column names its release "name@version".
func (m Matrix) Since() []Since {
	byName := map[string][]string{} // name → versions
	var names []string
	for _, im := range m.Impls {
		name, version, ok := strings.Cut(im.Name, "@")
		if !ok || !semver.IsValid(semv(version)) {
			continue
		}
		if byName[name] == nil {
			names = append(names, name)
		}
		byName[name] = append(byName[name], version)
	}
	g := m.grid()
	var out []Since
	for _, name := range names {
		versions := slices.Clone(byName[name])
		if len(versions) < 2 {
			continue
		}
		slices.SortStableFunc(versions, func(a, b string) int { return semver.Compare(semv(a), semv(b)) })
		s := Since{Impl: name, Versions: versions}
		for _, id := range g.rows {
			if row, ok := sinceRow(g, id, name, versions); ok {
				s.Rows = append(s.Rows, row)
			}
		}
		out = append(out, s)
	}
	return out
}

// sinceRow is requirement id's history over name's versions; false when no
// release has a result for it.
func sinceRow(g *grid, id, name string, versions []string) (SinceRow, bool) {
	row := SinceRow{Requirement: id, Regressed: []string{}, Unjudged: []string{}, Verdicts: map[string]string{}}
	last := map[string]verdict.Verdict{} // row key → its verdict at the last release that judged it
	any := false
	for _, v := range versions {
		col := name + "@" + v
		got := g.verdict(id, col)
		row.Verdicts[v] = string(got)
		any = any || got != ""
		switch got {
		case verdict.Pass:
			if row.FirstPass == nil {
				row.FirstPass = &v
			}
		case verdict.Inconclusive, verdict.Error:
			row.Unjudged = append(row.Unjudged, v)
		}
		if regressed(g.cell[id][col], last) {
			row.Regressed = append(row.Regressed, v)
		}
	}
	return row, any
}

// regressed reports whether one of a release's results rs fails where the
// same row passed at the last release that judged it, and files each
// judged row's verdict in last.
func regressed(rs []verdict.Result, last map[string]verdict.Verdict) bool {
	out := false
	for _, r := range rs {
		if r.Verdict != verdict.Pass && r.Verdict != verdict.Fail {
			continue
		}
		key := r.Spec + "\x00" + string(r.Mode) + "\x00" + r.Check
		out = out || (r.Verdict == verdict.Fail && last[key] == verdict.Pass)
		last[key] = r.Verdict
	}
	return out
}

func semv(v string) string {
	if strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

// Uncertain reports whether a release before the first pass gave no
// verdict (inconclusive or error), so that the requirement may have passed
// earlier.
func (r SinceRow) Uncertain() bool {
	return r.FirstPass != nil && len(r.Unjudged) > 0 && semver.Compare(semv(r.Unjudged[0]), semv(*r.FirstPass)) < 0
}

// printSince prints the since view of each implementation the matrix has
// at two or more releases.
func (m Matrix) printSince(w io.Writer) {
	for _, s := range m.Since() {
		fmt.Fprintf(w, "\nsince: %s, %d releases %s … %s (the first release that passes each requirement; where it\nregressed, pass → fail; releases without a pass or fail for it are passed over)\n",
			s.Impl, len(s.Versions), s.Versions[0], s.Versions[len(s.Versions)-1])
		fmt.Fprintf(w, "%-36s %-14s %-14s %s\n", "requirement", "first pass", "newest", "regressed at")
		newest := s.Versions[len(s.Versions)-1]
		uncertain := false
		for _, r := range s.Rows {
			first := "never"
			if r.FirstPass != nil {
				first = *r.FirstPass
			}
			if r.Uncertain() {
				first += "*"
				uncertain = true
			}
			regressed := "-"
			if len(r.Regressed) > 0 {
				regressed = strings.Join(r.Regressed, ", ")
			}
			now := r.Verdicts[newest]
			if now == "" {
				now = "-"
			}
			fmt.Fprintf(w, "%-36s %-14s %-14s %s\n", r.Requirement, first, now, regressed)
		}
		if uncertain {
			fmt.Fprintln(w, "* an older release gave no verdict on it (inconclusive or error): it may have passed earlier")
		}
	}
}

// sinceJSON is the since view as verify's JSON has it: by implementation.
func (m Matrix) sinceJSON() map[string]Since {
	ss := m.Since()
	if len(ss) == 0 {
		return nil
	}
	out := map[string]Since{}
	for _, s := range ss {
		out[s.Impl] = s
	}
	return out
}

// htmlSince is the since view as the HTML page takes it.
func (m Matrix) htmlSince() []html.Since {
	var out []html.Since
	for _, s := range m.Since() {
		hs := html.Since{Impl: s.Impl, Versions: s.Versions}
		for _, r := range s.Rows {
			row := html.SinceRow{Requirement: r.Requirement, Regressed: r.Regressed, Uncertain: r.Uncertain()}
			if r.FirstPass != nil {
				row.FirstPass = *r.FirstPass
			}
			hs.Rows = append(hs.Rows, row)
		}
		out = append(out, hs)
	}
	return out
}
