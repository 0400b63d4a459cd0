package worker

import (
	"sync/atomic"
	"testing"
	"time"
)

// Enqueues that finish while a wake-up is being published get one more
// wake-up after it, not one each; none is left without a wake-up sent
// after it.
func TestWakeUpsCoalesceButNeverDropTheLast(t *testing.T) {
	var w wakeUps
	var sent atomic.Int32
	release := make(chan struct{})
	first := make(chan struct{})
	publish := func() {
		if sent.Add(1) == 1 {
			close(first)
			<-release // the first PUBLISH is in flight
		}
	}
	w.request(publish)
	<-first
	for range 10 {
		w.request(publish) // finished while the first was in flight
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		idle := !w.running
		w.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the publisher never stopped")
		}
		time.Sleep(time.Millisecond)
	}
	if got := sent.Load(); got != 2 {
		t.Fatalf("publishes: expected 2 (the first, then one for the 10 that came during it), got %d", got)
	}
	w.request(publish)
	for sent.Load() != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("a later enqueue got no wake-up: %d publishes", sent.Load())
		}
		time.Sleep(time.Millisecond)
	}
}
