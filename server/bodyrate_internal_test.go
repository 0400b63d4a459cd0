package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// A large body slower than the minimum rate is dropped with 408
// body_too_slow, and its slot is free again.
func TestATricklingBodyIsDroppedAndItsSlotFreed(t *testing.T) {
	b := newBodySlots(1, time.Millisecond)
	b.grace, b.minRate = 200*time.Millisecond, 1<<20
	e := echo.New()
	e.HTTPErrorHandler = (&Server{log: slog.New(slog.DiscardHandler)}).handleError
	e.POST("/up", func(c echo.Context) error {
		release, err := b.acquire(c, "sk_a")
		if err != nil {
			return err
		}
		defer release()
		_, err = io.ReadAll(c.Request().Body)
		return slowBodyError(c, err)
	})
	srv := httptest.NewServer(e)
	defer srv.Close()

	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("a few bytes, then nothing"))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/up", pr)
	req.ContentLength = 1 << 20
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(got), string(ESLOWBODY)) {
		t.Fatalf("a trickling body: %d %s; want 408 %s", res.StatusCode, got, ESLOWBODY)
	}
	if release, err := b.acquire(largeBodyContext(), "sk_a"); err != nil {
		t.Fatalf("the only slot after the trickle was dropped: %v", err)
	} else {
		release()
	}
}
