package capture

import (
	"errors"
	"testing"

	"github.com/vishvananda/netns"
)

// TestInNamespace_BadHandleFailsWithoutRunningFn verifies a namespace that
// cannot be entered is reported and fn never runs outside it.
func TestInNamespace_BadHandleFailsWithoutRunningFn(t *testing.T) {
	ran := false
	err := inNamespace(netns.None(), func() error { ran = true; return nil })
	if err == nil || ran {
		t.Fatalf("inNamespace(None) = %v, fn ran: %v; want an error and fn not run", err, ran)
	}
}

// TestInNamespace_RunsFnInTargetAndReturnsItsError verifies fn runs with the
// thread inside the target namespace and its error comes back.
func TestInNamespace_RunsFnInTargetAndReturnsItsError(t *testing.T) {
	needRoot(t)
	target := newNamespace(t)
	errFn := errors.New("fn failed")
	inside := false
	err := inNamespace(target, func() error {
		cur, err := netns.Get()
		if err != nil {
			return err
		}
		defer cur.Close()
		inside = cur.Equal(target)
		return errFn
	})
	if !errors.Is(err, errFn) || !inside {
		t.Fatalf("inNamespace = %v, inside target: %v; want fn's error, true", err, inside)
	}
}
