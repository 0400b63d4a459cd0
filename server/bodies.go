package server

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// largeBody is the declared size from which a request body takes a slot:
// reading and decoding one holds the image once, plus buffers.
const largeBody = 256 << 10

// perLargeBody is what one large body is counted as when sizing the slots.
// Reading one costs about 1.15 × the image (held in chunks; BENCHMARK.md,
// "10 MiB job heap"), but the image outlives its slot until it is stored,
// while the next body is read: 3 × leaves room for that.
const perLargeBody = 3 * connector.MaxImageSize

// bodySlots caps how many large bodies are read and decoded at once, so a
// burst of 10 MiB uploads cannot exhaust memory: beyond the cap a request
// waits briefly, then gets 503 with Retry-After. Slots are for keys: a
// large body needs a key in a header before it takes one, one key holds at
// most perKey of them, and a body must arrive at minRate or be dropped.
type bodySlots struct {
	n, perKey int
	wait      time.Duration
	minRate   int64         // bytes per second a large body must average
	grace     time.Duration // how long before the rate is required

	mu    sync.Mutex
	used  int
	byKey map[string]int
	freed chan struct{} // closed (and replaced) when a slot is given back
}

// Defaults of the minimum body rate: after 10 s, a large body must have
// averaged 16 KiB/s since it began (a 10 MiB body over ~11 min at worst).
const (
	defaultBodyRate  = 16 << 10
	defaultBodyGrace = 10 * time.Second
)

func newBodySlots(n int, wait time.Duration) *bodySlots {
	if n <= 0 {
		n = DefaultLargeBodies()
	}
	return &bodySlots{n: n, perKey: max(1, n/4), wait: wait, minRate: defaultBodyRate, grace: defaultBodyGrace,
		byKey: map[string]int{}, freed: make(chan struct{})}
}

// errLargeBodyNeedsHeaderKey refuses a large body without a key in a
// header before a byte of it is read.
var errLargeBodyNeedsHeaderKey = &connector.Error{
	Code: connector.EUNAUTHORIZED,
	Message: "a body over 256 KiB needs the API key in a header: send it as X-API-Key or Authorization: Bearer " +
		"(an api_key field in the body is only read for smaller requests)",
}

// ESLOWBODY is a large body that arrived slower than the minimum rate: the
// connection is dropped and its slot freed (408).
const ESLOWBODY connector.ErrorCode = "body_too_slow"

// acquire takes a slot of key (the header key, already authenticated) for
// a large (or undeclared, chunked) body; release gives it back. Small
// bodies pass without one; a large body without a key is refused. While
// the slot is held the body must keep the minimum rate (see rateReader).
func (b *bodySlots) acquire(c echo.Context, key string) (release func(), err error) {
	if n := c.Request().ContentLength; n >= 0 && n < largeBody {
		return func() {}, nil
	}
	if key == "" {
		return nil, errLargeBodyNeedsHeaderKey
	}
	t := time.NewTimer(b.wait)
	defer t.Stop()
	for {
		b.mu.Lock()
		if b.used < b.n && b.byKey[key] < b.perKey {
			b.used++
			b.byKey[key]++
			b.mu.Unlock()
			return b.bodyRate(c, key), nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-t.C:
			return nil, &connector.Error{Code: connector.EBUSY, RetryAfter: 2 * time.Second,
				Message: "too many large uploads are being read right now (for this key or in all); retry shortly"}
		case <-c.Request().Context().Done():
			return nil, c.Request().Context().Err()
		}
	}
}

// give returns key's slot and wakes the waiters.
func (b *bodySlots) give(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used--
	if b.byKey[key]--; b.byKey[key] <= 0 {
		delete(b.byKey, key)
	}
	close(b.freed)
	b.freed = make(chan struct{})
}

// bodyRate puts the request body under the minimum rate while the slot is
// held, and returns the slot's release.
func (b *bodySlots) bodyRate(c echo.Context, key string) func() {
	req := c.Request()
	rc := http.NewResponseController(c.Response())
	rr := &rateReader{r: req.Body, rc: rc, start: time.Now(), rate: b.minRate, grace: b.grace}
	if rr.extend() != nil { // no deadline on this connection (e.g. a recorder): no rate
		return sync.OnceFunc(func() { b.give(key) })
	}
	req.Body = rr
	return sync.OnceFunc(func() {
		_ = rc.SetReadDeadline(time.Time{})
		b.give(key)
	})
}

// rateReader moves the connection's read deadline forward as bytes
// arrive: a body may take grace plus its size at the minimum rate. A body
// slower than that hits the deadline and its read fails with ESLOWBODY.
type rateReader struct {
	r     io.ReadCloser
	rc    *http.ResponseController
	start time.Time
	rate  int64
	grace time.Duration
	n     int64
	slow  bool
}

func (r *rateReader) extend() error {
	return r.rc.SetReadDeadline(r.start.Add(r.grace + time.Duration(r.n*int64(time.Second)/r.rate)))
}

func (r *rateReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	if n > 0 {
		_ = r.extend()
	}
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		r.slow = true
		return n, errSlowBody(r.rate)
	}
	return n, err
}

func (r *rateReader) Close() error { return r.r.Close() }

// slowBodyError is err, or ESLOWBODY when the body was dropped for its
// rate (whatever the reader made of the failed read); the connection is
// closed after the answer.
func slowBodyError(c echo.Context, err error) error {
	if rr, ok := c.Request().Body.(*rateReader); ok && rr.slow && err != nil {
		c.Response().Header().Set(echo.HeaderConnection, "close")
		return errSlowBody(rr.rate)
	}
	return err
}

func errSlowBody(rate int64) error {
	return &connector.Error{Code: ESLOWBODY,
		Message: fmt.Sprintf("the request body arrived slower than %d KiB/s; the connection is dropped: retry on a faster link", rate>>10)}
}

// DefaultLargeBodies sizes the large-body cap from the memory this process
// may use: half of GOMEMLIMIT, else of the cgroup's limit, else of 2 GiB,
// divided by what one large body costs; at least 2.
func DefaultLargeBodies() int {
	budget := int64(2 << 30)
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit < math.MaxInt64 {
		budget = limit
	} else if limit, ok := cgroupMemoryLimit(); ok {
		budget = limit
	}
	return max(2, int(budget/2/perLargeBody))
}

// cgroupMemoryLimit reads cgroup v2's memory.max ("max" means none).
func cgroupMemoryLimit() (int64, bool) {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n > 0
}
