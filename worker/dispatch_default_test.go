package worker

import "testing"

// Fair dispatch is the default; asynq stays the opt-out.
func TestDispatchIsFairUnlessAsynqIsAskedFor(t *testing.T) {
	h := newHarness(t)
	for dispatch, fair := range map[string]bool{"": true, DispatchFair: true, DispatchAsynq: false} {
		h.cfg.Dispatch = dispatch
		w, err := New(h.cfg)
		if err != nil {
			t.Fatalf("Dispatch %q: %v", dispatch, err)
		}
		if got := w.fair != nil && w.queue.fair != nil; got != fair {
			t.Errorf("Dispatch %q: fair dispatch %v, want %v", dispatch, got, fair)
		}
		w.Close()
	}
	h.cfg.Dispatch = "fifo"
	if _, err := New(h.cfg); err == nil {
		t.Error(`Dispatch "fifo" was accepted`)
	}
}
