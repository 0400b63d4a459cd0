package main

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/imgflow/imgflow/fixtures/images"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/s3test"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/internal/systemtest"
	"github.com/imgflow/imgflow/server"
)

// startScaledSystem runs serve and work as separate apps (as two processes
// would be), each opening REDIS_URL itself through system.Connect, with the
// reference upstream's ledger on the same Redis. configure sets the scale
// options under test.
func startScaledSystem(t *testing.T, prefix string, configure func(*system.Options)) *systemtest.System {
	t.Helper()
	logs := &systemtest.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	api := httptest.NewUnstartedServer(nil)
	opts := system.Options{
		PublicURL:     "http://" + api.Listener.Addr().String(),
		Secret:        "scale-test-secret-0123456789",
		AllowLoopback: true,
		ResultTTL:     time.Hour,
		Queue:         strings.TrimSuffix(prefix, ":"),
		KeyPrefix:     prefix,
		UpstreamURL:   "http://placeholder/api",
	}
	configure(&opts)
	ctx := context.Background()

	// The reference upstream, its accounts on the same Redis (cluster or not).
	rdb, _, closeRedis, err := system.OpenRedis(ctx, opts.RedisTarget())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeRedis)
	ledger := refupstream.NewLedger(rdb, prefix+"up:", nil)
	up := httptest.NewServer(refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: logger}))
	t.Cleanup(up.Close)
	key, _, err := ledger.CreateAccount(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts.UpstreamURL = up.URL + "/api"
	if err := opts.Validate(true); err != nil {
		t.Fatal(err)
	}

	serveApp, closeServe, err := system.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeServe)
	api.Config = server.NewHTTPServer(serveApp.APIServer(logger, nil).Handler())
	api.Start()
	t.Cleanup(api.Close)

	workApp, closeWork, err := system.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workApp.Worker(logger, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeWork) // after the worker's stop (cleanups run last first)
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	workApp.StartBlobSweeper(wctx, logger)
	systemtest.RunWorker(t, wctx, w)
	samples := httptest.NewServer(http.FileServer(http.Dir(images.Path(""))))
	t.Cleanup(samples.Close)
	return &systemtest.System{T: t, API: opts.PublicURL, Samples: samples.URL, Ledger: ledger, Key: key, Logs: logs, Options: opts}
}

// exerciseJobs is what a flow does, checked as a user would see it: an
// upload and a URL job waited for, a URL job polled, an Idempotency-Key
// replay, the listing, and a credit charged once per job.
func exerciseJobs(s *systemtest.System) {
	t := s.T
	t.Helper()
	auth := map[string]string{"X-API-Key": s.Key}
	png := images.Read(t, "photo.png")
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_base64":"`+base64.StdEncoding.EncodeToString(png)+`"}`), auth)
	s.ExpectCompressed(st, body, "image/png")

	st, _, body = s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/photo.jpg"}`), auth)
	s.ExpectCompressed(st, body, "image/jpeg")

	idem := map[string]string{"X-API-Key": s.Key, "Idempotency-Key": "scale-1"}
	st, _, body = s.Request("POST", "/v1/jobs", "application/json", strings.NewReader(`{"image_url":"`+s.Samples+`/photo.webp"}`), idem)
	first := systemtest.DecodeJob(t, st, body)
	if st != http.StatusAccepted {
		t.Fatalf("async job: status %d %s, want 202", st, body)
	}
	st, _, body = s.Request("POST", "/v1/jobs", "application/json", strings.NewReader(`{"image_url":"`+s.Samples+`/photo.webp"}`), idem)
	if again := systemtest.DecodeJob(t, st, body); again.ID != first.ID {
		t.Fatalf("Idempotency-Key replay made job %s, want the first %s", again.ID, first.ID)
	}
	// A polling flow: GET until finished.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, _, body = s.Request("GET", "/v1/jobs/"+first.ID, "", nil, auth)
		if j := systemtest.DecodeJob(t, st, body); j.Status == "completed" || j.Status == "failed" || time.Now().After(deadline) {
			break
		}
	}
	s.ExpectCompressed(st, body, "image/webp")

	st, _, body = s.Request("GET", "/v1/jobs?limit=2", "", nil, auth)
	if st != http.StatusOK || !strings.Contains(string(body), first.ID) || !strings.Contains(string(body), `"next_cursor":"0`) {
		t.Errorf("listing: %d %s; want the newest two jobs and a cursor", st, body)
	}
	if got := s.Credits(); got != 497 {
		t.Errorf("credits = %d after three jobs, want 497 (one per job)", got)
	}
}

func TestServeAndWorkRunOnARedisCluster(t *testing.T) {
	c := redistest.NewCluster(t)
	s := startScaledSystem(t, c.Prefix, func(o *system.Options) {
		o.RedisURL, o.RedisCluster = c.URL, true
	})
	exerciseJobs(s)
	// The keys command reads the same ledger through the cluster (the key
	// comes from the environment, never argv).
	t.Setenv(keyEnv, "sk_unknown000")
	if err := runKeys(context.Background(), []string{"show", "--redis", c.URL, "--redis-cluster"}); err == nil || !strings.Contains(err.Error(), "no account") {
		t.Errorf("keys show over the cluster = %v, want 'no account holds this key'", err)
	}
}

func TestServeAndWorkKeepImagesInS3(t *testing.T) {
	srv := s3test.New(t)
	r := redistest.New(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	s := startScaledSystem(t, r.Prefix, func(o *system.Options) {
		o.RedisURL, o.BlobStore = r.URL, srv.URL()
	})
	exerciseJobs(s)
	ctx := context.Background()
	// No image bytes of imgflow's in Redis: no blob keys, and no value as
	// big as an image. The reference upstream shares this Redis (prefix
	// up:); its Idempotency-Key records keep the answers it replays (the
	// compressed bytes, fixtures/upstream/README.md): a service of its own.
	for _, k := range r.Client.Keys(ctx, r.Prefix+"*").Val() {
		if strings.HasPrefix(k, r.Prefix+"up:") {
			continue
		}
		if strings.Contains(k, ":blob:") {
			t.Errorf("Redis holds blob key %s with S3 on", k)
		}
		if n, _ := r.Client.MemoryUsage(ctx, k).Result(); n > 16<<10 {
			t.Errorf("Redis key %s takes %d bytes; nothing should be image-sized with S3 on", k, n)
		}
	}
	// The results are objects; the inputs were deleted when their jobs ended.
	var ins, outs int
	for o := range srv.Client.ListObjects(ctx, srv.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		switch {
		case strings.HasPrefix(o.Key, "imgflow-out-"):
			outs++
		case strings.HasPrefix(o.Key, "imgflow-in-"):
			ins++
		}
	}
	if outs != 3 || ins != 0 {
		t.Errorf("bucket holds %d results and %d inputs, want 3 and 0", outs, ins)
	}
}

func TestPresignedFileURLsPointAtTheBucket(t *testing.T) {
	srv := s3test.New(t)
	r := redistest.New(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	s := startScaledSystem(t, r.Prefix, func(o *system.Options) {
		o.RedisURL, o.BlobStore, o.Presign = r.URL, srv.URL(), true
	})
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/photo.jpg"}`), map[string]string{"X-API-Key": s.Key})
	job := s.ExpectCompressed(st, body, "image/jpeg") // downloads file_url
	if !strings.HasPrefix(job.Result.FileURL, srv.Endpoint+"/"+srv.Bucket+"/imgflow-out-"+job.ID) || !strings.Contains(job.Result.FileURL, "X-Amz-Signature=") {
		t.Errorf("file_url = %s, want a presigned URL of the object on %s", job.Result.FileURL, srv.Endpoint)
	}
}
