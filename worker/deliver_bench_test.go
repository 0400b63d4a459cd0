package worker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// BenchmarkHookDelivery measures one hook delivery through the handler, to a
// receiver on loopback: load the job, the hook, the endpoint's policy (its
// state and a rate slot), render, sign, send, record. The rate is set so
// high that the slot is taken without a wait.
func BenchmarkHookDelivery(b *testing.B) {
	h := newHarness(&testing.T{})
	benchTweak(h)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer rcv.Close()
	ctx := context.Background()
	job := &connector.Job{ID: "0190a0a0-0000-7000-8000-00000000b001", Status: connector.StatusCompleted, Owner: h.owner,
		Result: &connector.JobResult{OriginalSize: 10, CompressedSize: 5, MIMEType: "image/png", Filename: "a.png"}}
	if err := h.store.Jobs.Create(ctx, job); err != nil {
		b.Fatal(err)
	}
	hook := &connector.Hook{ID: "hook_bench", TargetURL: rcv.URL, Event: connector.EventJobFinished, Owner: h.owner}
	if err := h.store.Hooks.Create(ctx, hook); err != nil {
		b.Fatal(err)
	}
	w, err := New(h.cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	task := deliveryTask(&testing.T{}, connector.Delivery{ID: connector.HookDeliveryID(job.ID, hook.ID), JobID: job.ID, HookID: hook.ID, Event: connector.EventJobCompleted})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := w.Handler().ProcessTask(ctx, task); err != nil {
			b.Fatal(err)
		}
	}
}
