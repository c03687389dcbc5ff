package serial

import (
	"fmt"
	"sync"
	"testing"
)

// TestQueue_ReentrantRunIsQueued verifies that a function submitted from
// inside a running one runs after it returns, on the same goroutine, in order.
func TestQueue_ReentrantRunIsQueued(t *testing.T) {
	var q Queue
	var got []string
	q.Run(func() {
		got = append(got, "a start")
		q.Run(func() { got = append(got, "b") })
		q.Run(func() { got = append(got, "c") })
		got = append(got, "a end")
	})
	if want := "[a start a end b c]"; fmt.Sprint(got) != want {
		t.Errorf("order = %v, want %s", got, want)
	}
}

// TestQueue_OneAtATime verifies that functions submitted from many
// goroutines never run concurrently and all run.
func TestQueue_OneAtATime(t *testing.T) {
	var q Queue
	var wg sync.WaitGroup
	running, ran := 0, 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.Run(func() {
				running++
				if running != 1 {
					t.Errorf("%d functions running at once", running)
				}
				ran++
				running--
			})
		}()
	}
	wg.Wait()
	if ran != 50 {
		t.Errorf("ran %d functions, want 50", ran)
	}
}
