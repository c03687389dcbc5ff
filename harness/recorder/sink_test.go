package recorder_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"

	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/trace"
)

func note(i int) trace.Event {
	return trace.Event{T: time.Duration(i), Source: trace.SourceHarness, Kind: trace.KindNote}
}

// TestBuffer_LimitKeepsMostRecent verifies the bounded-memory option: a
// full ring evicts the oldest events and counts them.
func TestBuffer_LimitKeepsMostRecent(t *testing.T) {
	b := recorder.NewBuffer(3)
	for i := 1; i <= 5; i++ {
		b.Record(note(i))
	}
	evs := b.Events()
	if len(evs) != 3 || evs[0].T != 3 || evs[1].T != 4 || evs[2].T != 5 {
		t.Fatalf("events %v, want T 3, 4, 5", evs)
	}
	if b.Dropped() != 2 {
		t.Fatalf("Dropped = %d, want 2", b.Dropped())
	}
}

// TestBuffer_WaitWakesOnRecord verifies that Wait returns as soon as a
// Record makes its condition true, and reports a done context otherwise.
func TestBuffer_WaitWakesOnRecord(t *testing.T) {
	b := recorder.NewBuffer(0)
	go func() {
		for i := 1; i <= 3; i++ {
			b.Record(note(i))
		}
	}()
	evs, err := b.Wait(context.Background(), func(evs []trace.Event) bool { return len(evs) == 3 })
	if err != nil || len(evs) != 3 {
		t.Fatalf("Wait: %d events, %v", len(evs), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Wait(ctx, func([]trace.Event) bool { return false }); err != context.Canceled {
		t.Fatalf("Wait on a cancelled context: %v", err)
	}
}

// TestRegisterSink_UnregisterRemovesOnlyItsOwn verifies that a stale
// unregister does not remove a sink registered later under the same name.
func TestRegisterSink_UnregisterRemovesOnlyItsOwn(t *testing.T) {
	first, second := recorder.NewBuffer(0), recorder.NewBuffer(0)
	unFirst := recorder.RegisterSink("only-its-own", first)
	unSecond := recorder.RegisterSink("only-its-own", second)
	defer unSecond()
	unFirst()
	w := recordedChannelWithConfig(t, `{"child":[{"conform_pick_first":{}}],"sink":"only-its-own"}`)
	w.ResolveEndpoints([]string{v4a})
	if len(second.Events()) == 0 || len(first.Events()) != 0 {
		t.Fatalf("second sink has %d events, first %d; want the second to record", len(second.Events()), len(first.Events()))
	}
}

// TestParseConfig_FirstRegisteredChild verifies the config's child list is
// read as a LoadBalancingConfig list, and that errors name the field.
func TestParseConfig_FirstRegisteredChild(t *testing.T) {
	p := balancer.Get(recorder.Name).(balancer.ConfigParser)
	if _, err := p.ParseConfig(json.RawMessage(`{"child":[{"no_such_policy":{}},{"pick_first":{}}]}`)); err != nil {
		t.Errorf("unregistered first child: %v", err)
	}
	for js, want := range map[string]string{
		`{"child":[{"no_such_policy":{}}]}`:                                 "no registered policy",
		`{"child":[{"conform_pick_first":{"connectionAttemptDelay":"x"}}]}`: `child[0] "conform_pick_first"`,
		`{"child":[{"a":{},"b":{}}]}`:                                       "child[0] has 2 policies",
		`{"child":3}`:                                                       "config",
	} {
		if _, err := p.ParseConfig(json.RawMessage(js)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%s) = %v, want an error containing %q", js, err, want)
		}
	}
}
