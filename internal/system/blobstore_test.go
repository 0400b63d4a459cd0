package system

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/s3test"
)

// Switching a running deployment to S3: inputs queued and results written
// to Redis before the switch stay readable until they expire.
func TestBlobsFromBeforeTheSwitchToS3StayReadable(t *testing.T) {
	srv := s3test.New(t)
	r := redistest.New(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	opts := Options{RedisURL: r.URL, BlobStore: srv.URL(), UpstreamURL: "http://127.0.0.1:1/api",
		Secret: "scale-test-secret-0123456789", ResultTTL: time.Hour, Queue: r.Queue(), KeyPrefix: r.Prefix}
	a, err := New(opts, r.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	if err := a.store.Blobs.Put(ctx, connector.OutputBlobKey("old"), strings.NewReader("before"), 6, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := connector.ReadBlob(ctx, a.blobs, connector.OutputBlobKey("old"))
	if err != nil || string(got) != "before" {
		t.Fatalf("blob written to Redis before the switch = %q, %v; want it read from Redis", got, err)
	}
	if err := a.blobs.Delete(ctx, connector.OutputBlobKey("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.blobs.Open(ctx, connector.OutputBlobKey("old")); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("after Delete: %v, want ENOTFOUND from both stores", err)
	}
}

func TestBlobStoreSettingsAreChecked(t *testing.T) {
	base := Options{RedisURL: "redis://127.0.0.1:6379/0", UpstreamURL: "http://u/api", Secret: "0123456789abcdef0123", ResultTTL: time.Hour}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	for _, c := range []struct {
		blobs   string
		presign bool
		want    string
	}{
		{"s3://b?endpoint=http://127.0.0.1:7070", false, "AWS_ACCESS_KEY_ID"},
		{"gcs://b", false, "IMGFLOW_BLOB_STORE"},
		{"redis", true, "IMGFLOW_PRESIGN"},
	} {
		o := base
		o.BlobStore, o.Presign = c.blobs, c.presign
		if err := o.Validate(false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("blob store %q presign %v: %v, want an error naming %s", c.blobs, c.presign, err, c.want)
		}
	}
}
