package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/app"
)

// beforeClaim runs fn once, just before the first claim of a set is sent.
func beforeClaim(fn func()) onCommand {
	var once sync.Once
	return func(cmd redis.Cmder) {
		if args := cmd.Args(); len(args) > 1 && strings.EqualFold(cmd.Name(), "set") {
			if key, _ := args[1].(string); strings.Contains(key, "imgflow:setclaim:") {
				once.Do(fn)
			}
		}
	}
}

// A run that claims a set its claimant made and released between this
// run's look and its claim (the first variant ended since, its input, the
// set's source, gone with it) takes the set as made: it does not make it
// again and write over its error with "the uploaded image expired".
func TestAVariantClaimingASetMadeMeanwhileTakesItAsMade(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	h := newHarness(t)
	ctx := context.Background()
	maker := app.New(app.Config{Jobs: h.store.Jobs, Batches: h.store.Batches, Queue: h.queue, Keyring: h.keyring, Logger: h.cfg.Logger})
	t.Cleanup(maker.Close)
	photo := images.Read(t, "photo.jpg")
	broken := photo[:len(photo)/3]
	set, _, err := maker.CreateSet(ctx, &app.SetRequest{Owner: h.owner, Key: h.apiKey,
		Input: app.Input{Kind: connector.InputBase64, Image: bytes.NewReader(broken)},
		Variants: []connector.Variant{{ID: "sm", Transform: connector.Transform{Resize: &connector.Resize{Method: connector.ResizeScale, Width: 100}}},
			{ID: "md", Transform: connector.Transform{Resize: &connector.Resize{Method: connector.ResizeScale, Width: 200}}}}})
	if err != nil {
		t.Fatal(err)
	}
	// As the claimant that ran first would have left it: the set made
	// with its error, its source gone with its first variant's end.
	made := beforeClaim(func() {
		ready, _ := json.Marshal(setReady{Error: connector.JobErrorFrom(connector.Errorf(connector.EFORMAT, "not an image"))})
		if err := h.store.Blobs.Put(ctx, setReadyKey(set.ID), bytes.NewReader(ready), int64(len(ready)), 0); err != nil {
			t.Error(err)
		}
		h.store.Blobs.Delete(ctx, connector.InputBlobKey(set.JobIDs[0]))
	})
	h.tweak = func(w *Worker) { w.rdb.AddHook(made) }
	h.start()
	for _, id := range set.JobIDs {
		got := h.waitJob(id, "finished", finished)
		if got.Status != connector.StatusFailed || got.Error == nil || got.Error.Code != connector.EFORMAT {
			t.Errorf("variant %s: %s %+v; want failed with the set's unsupported_format", got.Variant, got.Status, got.Error)
		}
	}
}
