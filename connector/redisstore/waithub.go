package redisstore

import (
	"context"
	"strings"
	"sync"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/psloop"
	"github.com/redis/go-redis/v9"
)

// waitHub shares one Redis subscription (PSUBSCRIBE <prefix>done:*) among
// every wait of a Store (jobs' and batches': jobwait.go), so a thousand
// flows waiting on ?wait hold one connection, not a thousand, and a waiter
// costs a map entry. A job's message carries the finished record (Update
// publishes it), so a woken waiter has its answer without reading the job
// again; a batch's carries nothing, and its waiter reads the batch.
type waitHub struct {
	rdb           redis.UniversalClient
	channelPrefix string // keyspace.doneChannels
	once          sync.Once
	ready         chan struct{} // closed once Redis confirmed the subscription
	mu            sync.Mutex
	waiters       map[string]map[chan *connector.Job]struct{}
}

func newWaitHub(rdb redis.UniversalClient, channelPrefix string) *waitHub {
	return &waitHub{rdb: rdb, channelPrefix: channelPrefix, ready: make(chan struct{}), waiters: map[string]map[chan *connector.Job]struct{}{}}
}

// start subscribes on first use; the subscription lives as long as the
// client (go-redis reconnects and resubscribes by itself).
func (h *waitHub) start() {
	h.once.Do(func() {
		ps := h.rdb.PSubscribe(context.Background(), h.channelPrefix+"*")
		go h.run(ps, h.channelPrefix)
	})
}

// run hands the subscription's messages to the waiters, on the goroutine
// that receives them (psloop: no hop through go-redis's Channel).
func (h *waitHub) run(ps *redis.PubSub, channelPrefix string) {
	confirmed := false
	psloop.Run(ps, func(msg any) {
		switch m := msg.(type) {
		case *redis.Subscription:
			if !confirmed {
				confirmed = true
				close(h.ready)
				return
			}
			// Resubscribed after a reconnect: a finish may have been
			// missed meanwhile, so every waiter reads its job again.
			h.wakeAll()
		case *redis.Message:
			h.wake(jobOfChannel(m.Channel, channelPrefix), m.Payload)
		}
	})
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

// jobOfChannel is the job or batch id of a done channel, done:{id}.
func jobOfChannel(channel, channelPrefix string) string {
	return strings.TrimSuffix(strings.TrimPrefix(channel, channelPrefix+"{"), "}")
}

// readyOrNil is the channel to wait on for the confirmation, or nil (never
// ready) once it has come.
func (h *waitHub) readyOrNil(subscribed bool) <-chan struct{} {
	if subscribed {
		return nil
	}
	return h.ready
}

// add registers a waiter for job or batch id; the returned channel
// receives the finished job, or nil when the record may have finished and
// must be read again. remove must follow.
func (h *waitHub) add(id string) chan *connector.Job {
	ch := make(chan *connector.Job, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters[id] == nil {
		h.waiters[id] = map[chan *connector.Job]struct{}{}
	}
	h.waiters[id][ch] = struct{}{}
	return ch
}

func (h *waitHub) remove(id string, ch chan *connector.Job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters[id], ch)
	if len(h.waiters[id]) == 0 {
		delete(h.waiters, id)
	}
}

// wake hands the published record to id's waiters; a payload that does not
// decode to id's finished record wakes them to read it.
func (h *waitHub) wake(id, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[id] {
		// Decoded per waiter (usually one): each may change what it gets.
		job, err := decodeJob([]byte(payload))
		if err != nil || job.ID != id || !job.Status.Finished() {
			job = nil
		}
		notify(ch, job)
	}
}

func (h *waitHub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.waiters {
		for ch := range set {
			notify(ch, nil)
		}
	}
}

// waiting counts the waiters of job id (for tests).
func (h *waitHub) waiting(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters[id])
}

func notify(ch chan *connector.Job, job *connector.Job) {
	select {
	case ch <- job:
	default: // a wake-up is already pending; finished is final, so either does
	}
}

// subscribedFor reports whether a wait is on id with the shared
// subscription confirmed (for tests).
func (s *Jobs) subscribedFor(id string) bool {
	return s.hub.subscribed() && s.hub.waiting(id) > 0
}
