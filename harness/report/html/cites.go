package html

import (
	"strings"

	"github.com/conformlab/conform/harness/trace"
)

// maxCites bounds the events a failure is zoomed on: evidence that lists
// more than that many events cites none of them in particular.
const maxCites = 8

// cites finds the events of evs that evidence cites, by their indexes.
// Checks cite an event by its String form (trace.Event.String); an excerpt
// of events around the point of failure (harness/match) marks the one
// that failed with "> ", and then only the marked ones are cited. An event
// is cited where its text ends a word in the evidence (so that "+1.0ms
// capture syn 198.19.0.1:50051" is not found inside a longer event's text).
// Equal texts are taken in trace order, one per mention.
func cites(evidence string, evs []trace.Event) []int {
	if evidence == "" {
		return nil
	}
	var marked, mentioned []string
	for _, line := range strings.Split(evidence, "\n") {
		l := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(l, "> "); ok {
			marked = append(marked, rest)
		}
	}
	if len(marked) == 0 {
		mentioned = []string{evidence}
	}
	used := map[int]bool{}
	var out []int
	find := func(text string, whole bool) {
		for i, e := range evs {
			if used[i] {
				continue
			}
			s := e.String()
			if (whole && s == text) || (!whole && mentions(text, s)) {
				used[i] = true
				out = append(out, i)
				if whole {
					return
				}
			}
		}
	}
	for _, m := range marked {
		find(m, true)
	}
	for _, m := range mentioned {
		find(m, false)
	}
	if len(out) > maxCites {
		return nil
	}
	return out
}

// mentions reports whether text contains s ending a word: followed by
// the end, a space, a newline or punctuation.
func mentions(text, s string) bool {
	for from := 0; ; {
		i := strings.Index(text[from:], s)
		if i < 0 {
			return false
		}
		end := from + i + len(s)
		if end == len(text) || strings.ContainsRune(" \n\t,;)]", rune(text[end])) {
			return true
		}
		from += i + 1
	}
}
