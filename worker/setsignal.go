package worker

import "sync"

// setSignals wakes a set's waiting runs in this process the moment its
// claimant here writes the set ready: without it they notice on their
// next poll, up to a poll interval (250 ms) after the inputs are made, a
// delay a set of small variants pays on every one. A claimant in another
// process is still noticed by polling. The zero value is ready to use.
type setSignals struct {
	mu sync.Mutex
	m  map[string]*setSignal
}

type setSignal struct {
	ch      chan struct{}
	waiters int
}

// watch returns a channel closed when setID is made ready here, and the
// release the waiter calls when it stops waiting.
func (s *setSignals) watch(setID string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*setSignal{}
	}
	sig := s.m[setID]
	if sig == nil {
		sig = &setSignal{ch: make(chan struct{})}
		s.m[setID] = sig
	}
	sig.waiters++
	return sig.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		sig.waiters--
		if sig.waiters == 0 && s.m[setID] == sig {
			delete(s.m, setID)
		}
	}
}

// ready wakes setID's waiters.
func (s *setSignals) ready(setID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig := s.m[setID]; sig != nil {
		close(sig.ch)
		delete(s.m, setID)
	}
}
