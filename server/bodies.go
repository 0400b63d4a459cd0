package server

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
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
// waits briefly, then gets 503 with Retry-After.
type bodySlots struct {
	ch   chan struct{}
	wait time.Duration
}

func newBodySlots(n int, wait time.Duration) *bodySlots {
	if n <= 0 {
		n = DefaultLargeBodies()
	}
	return &bodySlots{ch: make(chan struct{}, n), wait: wait}
}

// acquire takes a slot for a large (or undeclared, chunked) body; release
// gives it back. Small bodies pass without one.
func (b *bodySlots) acquire(c echo.Context) (release func(), err error) {
	if n := c.Request().ContentLength; n >= 0 && n < largeBody {
		return func() {}, nil
	}
	select {
	case b.ch <- struct{}{}:
		return func() { <-b.ch }, nil
	default:
	}
	t := time.NewTimer(b.wait)
	defer t.Stop()
	select {
	case b.ch <- struct{}{}:
		return func() { <-b.ch }, nil
	case <-t.C:
		return nil, &connector.Error{Code: connector.EBUSY, RetryAfter: 2 * time.Second,
			Message: "too many large uploads are being read right now; retry shortly"}
	case <-c.Request().Context().Done():
		return nil, c.Request().Context().Err()
	}
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
