package imaging

import (
	"context"
	"sync"
)

// A process's transforms are admitted by their cost in bytes, estimated
// from the pixels read and made and the output's encoder (transformCost),
// against one budget: a large image waits its turn in the process that
// took its task, rather than running beside others until memory runs out.
// One over the whole budget runs alone.

// TransformBudget is the bytes a process's transforms hold at once: two of
// the largest streaming transforms (50 MP read, 50 MP made as JPEG or
// PNG), or one of the largest AVIFs or WebPs (about 500 MiB at its peak).
const TransformBudget = 4 * 2 * 2 * MaxOutputPixels

var gate = newAdmission(TransformBudget)

// admission is a first-come, first-served weighted semaphore.
type admission struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	waiting  []*admissionWaiter
}

type admissionWaiter struct {
	n     int64
	ready chan struct{}
}

func newAdmission(capacity int64) *admission { return &admission{capacity: capacity} }

// acquire waits until n (at most the whole budget) fits, in arrival order,
// or ctx ends; release gives it back.
func (a *admission) acquire(ctx context.Context, n int64) (release func(), err error) {
	n = min(max(n, 1), a.capacity)
	a.mu.Lock()
	if len(a.waiting) == 0 && a.used+n <= a.capacity {
		a.used += n
		a.mu.Unlock()
		return func() { a.release(n) }, nil
	}
	w := &admissionWaiter{n: n, ready: make(chan struct{})}
	a.waiting = append(a.waiting, w)
	a.mu.Unlock()
	select {
	case <-w.ready:
		return func() { a.release(n) }, nil
	case <-ctx.Done():
		a.mu.Lock()
		select {
		case <-w.ready: // admitted meanwhile: give it back
			a.used -= n
		default:
			for i, o := range a.waiting {
				if o == w {
					a.waiting = append(a.waiting[:i], a.waiting[i+1:]...)
					break
				}
			}
		}
		a.admitLocked()
		a.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (a *admission) release(n int64) {
	a.mu.Lock()
	a.used -= n
	a.admitLocked()
	a.mu.Unlock()
}

func (a *admission) admitLocked() {
	for len(a.waiting) > 0 && a.used+a.waiting[0].n <= a.capacity {
		w := a.waiting[0]
		a.waiting = a.waiting[1:]
		a.used += w.n
		close(w.ready)
	}
}
