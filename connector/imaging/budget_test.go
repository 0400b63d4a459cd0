package imaging

import (
	"context"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// TestATransformPastItsDeadlineIsKilledWithACode: an enlargement to 48 MP
// PNG given a tenth of a second is stopped by libvips' kill hook and fails
// as ETRANSFORMTIME, a code the worker does not retry.
func TestATransformPastItsDeadlineIsKilledWithACode(t *testing.T) {
	needVips(t)
	tr := connector.Transform{Resize: &connector.Resize{Method: "scale", Width: 8000, Enlarge: true}}
	if err := tr.Normalize(""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := ApplyContext(ctx, fixture(t, "photo.png"), tr, 1<<30)
	if code := connector.ErrorCodeOf(err); code != connector.ETRANSFORMTIME {
		t.Fatalf("got %v (result %v), want %s", err, res != nil, connector.ETRANSFORMTIME)
	}
	if connector.AsError(err).Retryable {
		t.Fatal("a transform out of time is marked retryable: it would run again past its deadline")
	}
}

func TestAnOutputOverThePixelCapIsRefusedBeforeDecoding(t *testing.T) {
	needVips(t)
	tr := connector.Transform{Resize: &connector.Resize{Method: "scale", Width: 16384, Enlarge: true}}
	if err := tr.Normalize(""); err != nil {
		t.Fatal(err)
	}
	_, err := Apply(fixture(t, "photo.png"), tr, 1<<30) // 320×240 → 16384×12288
	if connector.ErrorCodeOf(err) != connector.EINVALID {
		t.Fatalf("got %v, want %s naming the limit", err, connector.EINVALID)
	}
}

// TestTheAdmissionGateAdmitsInTurn: a transform that does not fit the
// budget waits until one before it gives its share back, and one over the
// whole budget runs alone rather than never.
func TestTheAdmissionGateAdmitsInTurn(t *testing.T) {
	a := newAdmission(10)
	r1, err := a.acquire(context.Background(), 6)
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan func())
	go func() {
		r, _ := a.acquire(context.Background(), 100) // over the budget: waits for all of it
		admitted <- r
	}()
	select {
	case <-admitted:
		t.Fatal("admitted beside a transform holding part of the budget")
	case <-time.After(50 * time.Millisecond):
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.acquire(ctx, 1); err == nil {
		t.Fatal("a later, small transform jumped the queue")
	}
	r1()
	r2 := <-admitted
	r2()
	r3, err := a.acquire(context.Background(), 10)
	if err != nil {
		t.Fatalf("the budget was not given back: %v", err)
	}
	r3()
}
