package redisstore

import "sync"

// jobCacheSize bounds the records a Store remembers (about 1 KB each).
const jobCacheSize = 4096

// jobCache remembers the stored bytes of unfinished jobs this process read
// or wrote last, so that Update can send its compare-and-set at once
// instead of reading the record first: a worker's start, result and finish
// of a job then cost one round trip each. A stale entry is harmless: the
// script compares against Redis and answers with the current record, which
// is what the read would have fetched.
type jobCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newJobCache() *jobCache { return &jobCache{m: map[string][]byte{}} }

func (c *jobCache) get(id string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// put remembers data for an unfinished job and forgets a finished one,
// which is not updated on the worker's hot path again.
func (c *jobCache) put(id string, data []byte, finished bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if finished {
		delete(c.m, id)
		return
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= jobCacheSize {
		clear(c.m) // crude, but a miss only costs the read it saves
	}
	c.m[id] = data
}

func (c *jobCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}
