package worker

import (
	"bytes"
	"context"
	"image/jpeg"
	"testing"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
)

// An answer that scores under the target's min_score is not delivered:
// the fitted candidate, which reached the floor within the budget, goes
// instead, and result.score is its score.
func TestAnAnswerUnderMinScoreGivesWayToTheCandidate(t *testing.T) {
	if err := imaging.Available(); err != nil {
		t.Skip(err)
	}
	h := newHarness(t)
	h.comp.answer = func(sent []byte) []byte { // a poor answer, well under the budget
		img, err := jpeg.Decode(bytes.NewReader(sent))
		if err != nil {
			return sent
		}
		var b bytes.Buffer
		jpeg.Encode(&b, img, &jpeg.Options{Quality: 3})
		return b.Bytes()
	}
	_, stop := h.start()
	defer stop()
	url := "https://images.test/photo.jpg"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.jpg")), MIMEType: "image/jpeg", Filename: "photo.jpg"})
	minScore := 60.0
	job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: h.owner,
		Input: connector.JobInput{Kind: connector.InputURL, URL: url}, SealedKey: h.keyring.Seal(h.apiKey),
		Transform: connector.Transform{Target: &connector.Target{MaxBytes: 15_000, MinScore: &minScore}}}
	if err := h.store.Jobs.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	h.enqueue(job.ID)
	done := h.waitJob(job.ID, "finished", finished)
	if done.Status != connector.StatusCompleted || done.Result == nil || done.Result.Score == nil {
		t.Fatalf("job: %+v %+v; want completed with a score", done.Status, done.Error)
	}
	out, err := connector.ReadBlob(context.Background(), h.store.Blobs, connector.OutputBlobKey(job.ID))
	if err != nil {
		t.Fatal(err)
	}
	score, err := imaging.Score(context.Background(), images.Read(t, "photo.jpg"), job.Transform, out)
	if err != nil || score < minScore || int64(len(out)) > 15_000 || *done.Result.Score < minScore || done.Result.CompressedSize != int64(len(out)) {
		t.Fatalf("delivered %d bytes scoring %.2f (%v), result.score %v, compressed_size %d; want ≤ 15000 bytes scoring ≥ %g",
			len(out), score, err, *done.Result.Score, done.Result.CompressedSize, minScore)
	}
}
