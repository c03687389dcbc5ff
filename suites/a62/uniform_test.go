package a62

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
)

// TestShuffleTests_RejectTheKnownBadShuffles verifies the sample size
// shuffleSamples is enough: each uniformity test's false-fail probability
// is within shuffleAlpha, and the test rejects, whatever the sample, a
// client whose shuffle reaches at most a few orders: never shuffling (one
// order), and for three endpoints Sattolo's algorithm (two) or a
// Fisher–Yates loop that stops a swap short (three). Over s equally used
// orders of k, X² is at least N·(k/s − 1), its value at an even split:
// the smallest the statistic can be for counts on s orders.
func TestShuffleTests_RejectTheKnownBadShuffles(t *testing.T) {
	for n, orders := range map[int][]int{2: {1}, 3: {1, 2, 3}} {
		test := shuffleTests[n]
		if test.FalseFail > shuffleAlpha {
			t.Errorf("%d endpoints: %v: false-fail probability above %g", n, test, shuffleAlpha)
		}
		for _, s := range orders {
			least := float64(test.Samples) * (float64(test.Classes)/float64(s) - 1)
			if least < test.CriticalChiSquare() {
				t.Errorf("%d endpoints, a shuffle reaching %d of %d orders: X² can be as low as %.2f, under the critical %.2f: not always rejected",
					n, s, test.Classes, least, test.CriticalChiSquare())
			}
		}
	}
}

// TestShuffleNotes_StateTheTests verifies that the catalogue states each
// statistical check's numbers as the code has them: the sample size, the
// critical value and the false-fail probability.
func TestShuffleNotes_StateTheTests(t *testing.T) {
	for _, c := range []struct {
		id string
		ns []int
	}{{"A62-SHUFFLE-UNIFORM", []int{2, 3}}, {"A62-XDS-SHUFFLE", []int{3}}} {
		r, ok := requirement.ByID(c.id)
		if !ok {
			t.Fatalf("%s is not in the catalogue", c.id)
		}
		for _, n := range c.ns {
			test := shuffleTests[n]
			for _, want := range []string{
				fmt.Sprintf("%d usable passes", test.Samples),
				fmt.Sprintf("(%d ", shuffleLists),
				fmt.Sprintf("sent %d ms apart", listPeriod.Milliseconds()),
				fmt.Sprintf("X² ≥ %.2f", test.CriticalChiSquare()),
				fmt.Sprintf("false-fail probability %.1e", test.FalseFail),
			} {
				if !strings.Contains(r.Note, want) {
					t.Errorf("%s's note does not say %q (the test for %d endpoints: %v)", c.id, want, n, test)
				}
			}
		}
	}
	r, _ := requirement.ByID("A62-SHUFFLE-OFF-KEEPS-ORDER")
	for _, want := range []string{fmt.Sprintf("%d fresh lists", orderLists), fmt.Sprintf("at least %d", orderSamples)} {
		if !strings.Contains(r.Note, want) {
			t.Errorf("A62-SHUFFLE-OFF-KEEPS-ORDER's note does not say %q", want)
		}
	}
}

// try is one attempt of a pass: its address and when the capture saw its
// SYN and its refusal (RST); rst 0 leaves the refusal out.
type try struct {
	addr     string
	syn, rst time.Duration
}

// capturePass is the capture of tries, each attempt on a port of its own.
func capturePass(tries []try) (syns, rsts []trace.Event) {
	for i, x := range tries {
		port := 40000 + i
		syns = append(syns, trace.Event{T: x.syn, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: x.addr, Port: port})
		if x.rst > 0 {
			rsts = append(rsts, trace.Event{T: x.rst, Source: trace.SourceCapture, Kind: trace.KindRST, Addr: x.addr, Port: port})
		}
	}
	return syns, rsts
}

// TestPassOf_ReadsOnePassOneAtATime verifies which passes are usable and
// the order read from them: a pass one at a time gives its order; one with
// an endpoint untried, one whose attempt left before the previous refusal
// (in parallel, or a SYN stamped late) and one with an unanswered attempt
// are not usable.
func TestPassOf_ReadsOnePassOneAtATime(t *testing.T) {
	const a, b, c = "198.19.0.1:50051", "198.19.0.2:50051", "198.19.0.3:50051"
	l := list{addrs: []string{a, b, c}}
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		tries []try
		order []int
		why   string
	}{
		{"one at a time", []try{{c, 1 * ms, 2 * ms}, {a, 2 * ms, 3 * ms}, {b, 4 * ms, 5 * ms}}, []int{2, 0, 1}, ""},
		{"untried endpoint", []try{{c, 1 * ms, 2 * ms}, {a, 3 * ms, 4 * ms}}, nil, "2 of its 3 endpoints were tried"},
		{"in parallel", []try{{a, 1 * ms, 3 * ms}, {b, 2 * ms, 3 * ms}, {c, 4 * ms, 5 * ms}}, nil, "before the one to " + a + " was refused"},
		{"unanswered", []try{{a, 1 * ms, 0}, {b, 2 * ms, 3 * ms}, {c, 4 * ms, 5 * ms}}, nil, "has no refusal"},
	} {
		syns, rsts := capturePass(tc.tries)
		p := passOf(l, syns, rsts)
		if !slices.Equal(p.order, tc.order) || (tc.why == "") != (p.why == "") || !strings.Contains(p.why, tc.why) {
			t.Errorf("%s: pass %+v, want order %v, why containing %q", tc.name, p, tc.order, tc.why)
		}
	}
}

// TestOrderIndex_NumbersTheNamedOrders verifies that orderIndex and
// orderNames agree: each order's index names it, the order given first.
func TestOrderIndex_NumbersTheNamedOrders(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		names := orderNames(n)
		for i, name := range names {
			order := make([]int, n)
			for j, ch := range name {
				order[j] = int(ch - '1')
			}
			if got := orderIndex(order); got != i {
				t.Errorf("orderIndex(%v) = %d, orderNames has it at %d", order, got, i)
			}
		}
		if len(names[0]) != n || !inOrderName(names[0]) {
			t.Errorf("orderNames(%d)[0] = %s, want the order given", n, names[0])
		}
	}
}

func inOrderName(s string) bool {
	for i, ch := range s {
		if int(ch-'1') != i {
			return false
		}
	}
	return true
}
