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

	"github.com/hibiken/asynq"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/s3test"
	"github.com/imgflow/imgflow/server"
	"github.com/minio/minio-go/v7"
	"github.com/redis/go-redis/v9"
)

// startScaledSystem runs serve and work as separate apps (as two processes
// would be), each opening REDIS_URL itself through connectApp, with the
// reference upstream's ledger on the same Redis. configure sets the scale
// options under test.
func startScaledSystem(t *testing.T, prefix string, configure func(*appOptions)) *system {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	api := httptest.NewUnstartedServer(nil)
	opts := appOptions{
		PublicURL:     "http://" + api.Listener.Addr().String(),
		Secret:        "scale-test-secret-0123456789",
		allowLoopback: true,
		ResultTTL:     time.Hour,
		Queue:         strings.TrimSuffix(prefix, ":"),
		keyPrefix:     prefix,
		UpstreamURL:   "http://placeholder/api",
	}
	configure(&opts)
	ctx := context.Background()

	// The reference upstream, its accounts on the same Redis (cluster or not).
	rdb, _, closeRedis, err := openRedis(ctx, opts.redis())
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
	if err := opts.validate(true); err != nil {
		t.Fatal(err)
	}

	serveApp, closeServe, err := connectApp(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeServe)
	api.Config = server.NewHTTPServer(serveApp.apiServer(logger, nil).Handler())
	api.Start()
	t.Cleanup(api.Close)

	workApp, closeWork, err := connectApp(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workApp.worker(logger, 2)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	workApp.startBlobSweeper(wctx, logger)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("worker did not stop within 20s")
		}
		w.Close()
		closeWork()
	})
	samples := httptest.NewServer(http.FileServer(http.Dir(images.Path(""))))
	t.Cleanup(samples.Close)
	return &system{t: t, api: opts.PublicURL, samples: samples.URL, ledger: ledger, key: key, logs: logs}
}

// exerciseJobs is what a flow does, checked as a user would see it: an
// upload and a URL job waited for, a URL job polled, an Idempotency-Key
// replay, the listing, and a credit charged once per job.
func (s *system) exerciseJobs() {
	t := s.t
	t.Helper()
	auth := map[string]string{"X-API-Key": s.key}
	png := images.Read(t, "photo.png")
	st, _, body := s.request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_base64":"`+base64.StdEncoding.EncodeToString(png)+`"}`), auth)
	s.expectCompressed(st, body, "image/png")

	st, _, body = s.request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.samples+`/photo.jpg"}`), auth)
	s.expectCompressed(st, body, "image/jpeg")

	idem := map[string]string{"X-API-Key": s.key, "Idempotency-Key": "scale-1"}
	st, _, body = s.request("POST", "/v1/jobs", "application/json", strings.NewReader(`{"image_url":"`+s.samples+`/photo.webp"}`), idem)
	first := decodeJob(t, st, body)
	if st != http.StatusAccepted {
		t.Fatalf("async job: status %d %s, want 202", st, body)
	}
	st, _, body = s.request("POST", "/v1/jobs", "application/json", strings.NewReader(`{"image_url":"`+s.samples+`/photo.webp"}`), idem)
	if again := decodeJob(t, st, body); again.ID != first.ID {
		t.Fatalf("Idempotency-Key replay made job %s, want the first %s", again.ID, first.ID)
	}
	// A polling flow: GET until finished.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, _, body = s.request("GET", "/v1/jobs/"+first.ID, "", nil, auth)
		if j := decodeJob(t, st, body); j.Status == "completed" || j.Status == "failed" || time.Now().After(deadline) {
			break
		}
	}
	s.expectCompressed(st, body, "image/webp")

	st, _, body = s.request("GET", "/v1/jobs?limit=2", "", nil, auth)
	if st != http.StatusOK || !strings.Contains(string(body), first.ID) || !strings.Contains(string(body), `"next_cursor":"0`) {
		t.Errorf("listing: %d %s; want the newest two jobs and a cursor", st, body)
	}
	if got := s.credits(); got != 497 {
		t.Errorf("credits = %d after three jobs, want 497 (one per job)", got)
	}
}

func TestServeAndWorkRunOnARedisCluster(t *testing.T) {
	c := redistest.NewCluster(t)
	s := startScaledSystem(t, c.Prefix, func(o *appOptions) {
		o.RedisURL, o.RedisCluster = c.URL, true
	})
	s.exerciseJobs()
	// The keys command reads the same ledger through the cluster (the key
	// comes from the environment, never argv).
	t.Setenv(keyEnv, "sk_unknown000")
	if err := runKeys(context.Background(), []string{"show", "--redis", c.URL, "--redis-cluster"}); err == nil || !strings.Contains(err.Error(), "no account") {
		t.Errorf("keys show over the cluster = %v, want 'no account holds this key'", err)
	}
}

func TestClusterURLsAreReadAsClusters(t *testing.T) {
	target := redisTarget{URL: "redis://:pw@127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", Cluster: true}
	c, err := redisClient(target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Errorf("client for a cluster URL is %T, want *redis.ClusterClient", c)
	}
	opt, err := target.connOpt()
	if o, ok := opt.(asynq.RedisClusterClientOpt); err != nil || !ok || len(o.Addrs) != 3 || o.Password != "pw" {
		t.Errorf("asynq option = %#v, %v; want the cluster option with 3 nodes and the password", opt, err)
	}
	_, _, _, err = openRedis(context.Background(), redisTarget{Cluster: true})
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") || !strings.Contains(err.Error(), "IMGFLOW_REDIS_CLUSTER") {
		t.Errorf("cluster without a URL: err = %v, want one naming both variables", err)
	}
}

func TestServeAndWorkKeepImagesInS3(t *testing.T) {
	srv := s3test.New(t)
	r := redistest.New(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	s := startScaledSystem(t, r.Prefix, func(o *appOptions) {
		o.RedisURL, o.BlobStore = r.URL, srv.URL()
	})
	s.exerciseJobs()
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
	s := startScaledSystem(t, r.Prefix, func(o *appOptions) {
		o.RedisURL, o.BlobStore, o.Presign = r.URL, srv.URL(), true
	})
	st, _, body := s.request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.samples+`/photo.jpg"}`), map[string]string{"X-API-Key": s.key})
	job := s.expectCompressed(st, body, "image/jpeg") // downloads file_url
	if !strings.HasPrefix(job.Result.FileURL, srv.Endpoint+"/"+srv.Bucket+"/imgflow-out-"+job.ID) || !strings.Contains(job.Result.FileURL, "X-Amz-Signature=") {
		t.Errorf("file_url = %s, want a presigned URL of the object on %s", job.Result.FileURL, srv.Endpoint)
	}
}

// Switching a running deployment to S3: inputs queued and results written
// to Redis before the switch stay readable until they expire.
func TestBlobsFromBeforeTheSwitchToS3StayReadable(t *testing.T) {
	srv := s3test.New(t)
	r := redistest.New(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	opts := appOptions{RedisURL: r.URL, BlobStore: srv.URL(), UpstreamURL: "http://127.0.0.1:1/api",
		Secret: "scale-test-secret-0123456789", ResultTTL: time.Hour, Queue: r.Queue(), keyPrefix: r.Prefix}
	a, err := newApp(opts, r.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	if err := a.store.Blobs.PutBlob(ctx, connector.OutputBlobKey("old"), strings.NewReader("before"), 6, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := connector.ReadBlob(ctx, a.blobs, connector.OutputBlobKey("old"))
	if err != nil || string(got) != "before" {
		t.Fatalf("blob written to Redis before the switch = %q, %v; want it read from Redis", got, err)
	}
	if err := a.blobs.DeleteBlob(ctx, connector.OutputBlobKey("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.blobs.OpenBlob(ctx, connector.OutputBlobKey("old")); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("after DeleteBlob: %v, want ENOTFOUND from both stores", err)
	}
}

func TestBlobStoreSettingsAreChecked(t *testing.T) {
	base := appOptions{RedisURL: "redis://127.0.0.1:6379/0", UpstreamURL: "http://u/api", Secret: "0123456789abcdef0123", ResultTTL: time.Hour}
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
		if err := o.validate(false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("blob store %q presign %v: %v, want an error naming %s", c.blobs, c.presign, err, c.want)
		}
	}
}
