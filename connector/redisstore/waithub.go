package redisstore

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// waitHub shares one Redis subscription (PSUBSCRIBE {prefix}done:*) among
// every WaitJob of a Store, so a thousand flows waiting on ?wait hold one
// connection, not a thousand, and a waiter costs a map entry.
type waitHub struct {
	once    sync.Once
	ready   chan struct{} // closed once Redis confirmed the subscription
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

func newWaitHub() *waitHub {
	return &waitHub{ready: make(chan struct{}), waiters: map[string]map[chan struct{}]struct{}{}}
}

// start subscribes on first use; the subscription lives as long as the
// client (go-redis reconnects and resubscribes by itself).
func (h *waitHub) start(rdb redis.UniversalClient, prefix string) {
	h.once.Do(func() {
		ps := rdb.PSubscribe(context.Background(), prefix+"done:*")
		go h.run(ps, prefix+"done:")
	})
}

func (h *waitHub) run(ps *redis.PubSub, channelPrefix string) {
	confirmed := false
	for msg := range ps.ChannelWithSubscriptions() {
		switch m := msg.(type) {
		case *redis.Subscription:
			if !confirmed {
				confirmed = true
				close(h.ready)
				continue
			}
			// Resubscribed after a reconnect: a finish may have been
			// missed meanwhile, so every waiter reads its job again.
			h.wakeAll()
		case *redis.Message:
			h.wake(strings.TrimPrefix(m.Channel, channelPrefix))
		}
	}
}

// subscribed reports whether Redis has confirmed the subscription.
func (h *waitHub) subscribed() bool {
	select {
	case <-h.ready:
		return true
	default:
		return false
	}
}

// readyOrNil is the channel to wait on for the confirmation, or nil (never
// ready) once it has come.
func (h *waitHub) readyOrNil(subscribed bool) <-chan struct{} {
	if subscribed {
		return nil
	}
	return h.ready
}

// add registers a waiter for job id; the returned channel receives a value
// when the job may have finished. remove must follow.
func (h *waitHub) add(id string) chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters[id] == nil {
		h.waiters[id] = map[chan struct{}]struct{}{}
	}
	h.waiters[id][ch] = struct{}{}
	return ch
}

func (h *waitHub) remove(id string, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters[id], ch)
	if len(h.waiters[id]) == 0 {
		delete(h.waiters, id)
	}
}

func (h *waitHub) wake(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[id] {
		notify(ch)
	}
}

func (h *waitHub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.waiters {
		for ch := range set {
			notify(ch)
		}
	}
}

// waiting counts the waiters of job id (for tests).
func (h *waitHub) waiting(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters[id])
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// subscribedFor reports whether a WaitJob waits on job id with the shared
// subscription confirmed (for tests).
func (s *Store) subscribedFor(id string) bool {
	return s.hub.subscribed() && s.hub.waiting(id) > 0
}
