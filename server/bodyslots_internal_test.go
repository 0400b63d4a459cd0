package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// largeBodyContext is a request declaring a 1 MiB body.
func largeBodyContext() echo.Context {
	req := httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(""))
	req.ContentLength = 1 << 20
	return echo.New().NewContext(req, httptest.NewRecorder())
}

// One key holds at most its share of the large-body slots: the others stay
// free for other keys; a large body without a header key takes none.
func TestLargeBodySlotsArePerKey(t *testing.T) {
	b := newBodySlots(8, time.Millisecond) // 2 per key
	var held []func()
	for range 2 {
		release, err := b.acquire(largeBodyContext(), "sk_a")
		if err != nil {
			t.Fatalf("key a's slot within its share: %v", err)
		}
		held = append(held, release)
	}
	if _, err := b.acquire(largeBodyContext(), "sk_a"); connector.ErrorCodeOf(err) != connector.EBUSY {
		t.Fatalf("key a past its share: %v; want server_busy", err)
	}
	for range 2 {
		if _, err := b.acquire(largeBodyContext(), "sk_b"); err != nil {
			t.Fatalf("key b while key a holds its share: %v", err)
		}
	}
	if _, err := b.acquire(largeBodyContext(), ""); connector.ErrorCodeOf(err) != connector.EUNAUTHORIZED ||
		!strings.Contains(err.Error(), "header") {
		t.Fatalf("a large body without a header key: %v; want invalid_key asking for a header", err)
	}
	held[0]()
	if _, err := b.acquire(largeBodyContext(), "sk_a"); err != nil {
		t.Fatalf("key a after giving one back: %v", err)
	}
}
