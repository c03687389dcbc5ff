package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/verdict"
)

// Progress prints the line that says run r finished: finished of total, its
// document, spec and mode, how many of each verdict, and how long it took.
func Progress(w io.Writer, r Run, took time.Duration, finished, total int) {
	n := map[verdict.Verdict]int{}
	for _, res := range r.Results {
		n[res.Verdict]++
	}
	var parts []string
	for _, v := range verdict.Verdicts {
		if n[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[v], v))
		}
	}
	fmt.Fprintf(w, "[%*d/%d] %-4s %-40s %-4s %-28s %6.2fs\n", len(fmt.Sprint(total)), finished, total,
		strings.ToLower(r.Doc), r.Spec, r.Mode, strings.Join(parts, ", "), took.Seconds())
}
