package s3blob

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/blobtest"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/s3test"
	"github.com/minio/minio-go/v7"
)

// newStore returns a Store on a fresh versitygw bucket, its deadlines in
// the test's Redis, and the server.
func newStore(t *testing.T) (*Store, *redisstore.Store, *s3test.Server) {
	t.Helper()
	srv := s3test.New(t)
	r := redistest.New(t)
	rs := redisstore.New(r.Client, redisstore.Options{Prefix: r.Prefix})
	c, err := ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c.AccessKey, c.SecretKey = srv.AccessKey, srv.SecretKey
	s, err := New(c, rs.Blobs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	return s, rs, srv
}

func TestBlobStoreContractOnS3(t *testing.T) {
	s, _, _ := newStore(t)
	n := 0
	blobtest.Run(t, func(t *testing.T) connector.BlobStore {
		n++
		c := *s
		c.prefix = "run" + string(rune('a'+n)) + "-"
		return &c
	})
}

func TestBlobsAreObjectsNotRedisKeys(t *testing.T) {
	s, _, srv := newStore(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("img"), 1000)
	if err := s.Put(ctx, connector.OutputBlobKey("job1"), bytes.NewReader(data), int64(len(data)), time.Hour); err != nil {
		t.Fatal(err)
	}
	info, err := srv.Client.StatObject(ctx, srv.Bucket, "imgflow-out-job1", minio.StatObjectOptions{})
	if err != nil || info.Size != int64(len(data)) {
		t.Fatalf("object imgflow-out-job1 = %d bytes, %v; want %d bytes", info.Size, err, len(data))
	}
}

func TestSweepDeletesOnlyExpiredBlobs(t *testing.T) {
	s, _, srv := newStore(t)
	ctx := context.Background()
	start := time.Now()
	clock := start
	s.now = func() time.Time { return clock }
	put := func(key string, ttl time.Duration) {
		t.Helper()
		if err := s.Put(ctx, key, strings.NewReader("x"), 1, ttl); err != nil {
			t.Fatal(err)
		}
	}
	put("in:short", time.Minute)
	put("out:long", 24*time.Hour)
	put("out:none", 0) // no expiry

	clock = start.Add(3 * time.Minute)
	n, err := s.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Sweep after 3 min = %d, %v; want 1 expired blob", n, err)
	}
	if _, err := s.Open(ctx, "in:short"); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("blob past its TTL: Open = %v, want ENOTFOUND", err)
	}
	for _, k := range []string{"out:long", "out:none"} {
		if _, err := s.Open(ctx, k); err != nil {
			t.Errorf("%s deleted early: %v", k, err)
		}
	}
	clock = start.Add(25 * time.Hour)
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep after 25 h = %d, %v; want 1", n, err)
	}
	left := 0
	for range srv.Client.ListObjects(ctx, srv.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		left++
	}
	if left != 1 {
		t.Errorf("%d objects left, want 1 (the one without expiry)", left)
	}
}

func TestPresignedURLDownloadsWithoutCredentials(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	data := []byte("\x89PNG fake but bytes")
	if err := s.Put(ctx, "out:j", bytes.NewReader(data), int64(len(data)), time.Hour); err != nil {
		t.Fatal(err)
	}
	u, err := s.PresignedURL(ctx, "out:j", "image/png", `attachment; filename="a.png"`, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(got, data) || res.Header.Get("Content-Type") != "image/png" || !strings.Contains(res.Header.Get("Content-Disposition"), "a.png") {
		t.Fatalf("presigned GET = %d %q (%s, %s); want 200, the bytes, image/png and the filename",
			res.StatusCode, got, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
	}
	tampered := strings.Replace(u, "out-j", "out-k", 1)
	if res, err := http.Get(tampered); err == nil {
		res.Body.Close()
		if res.StatusCode == 200 {
			t.Error("a presigned URL edited to another object still downloads")
		}
	}
}

func TestParseURL(t *testing.T) {
	c, err := ParseURL("s3://bucket/some/prefix?endpoint=http://127.0.0.1:7070&region=eu-west-1&path_style=true")
	if err != nil || c.Bucket != "bucket" || c.Endpoint != "http://127.0.0.1:7070" || c.Region != "eu-west-1" || !c.PathStyle || c.Prefix != "some/prefix/" {
		t.Fatalf("ParseURL = %+v, %v", c, err)
	}
	for _, bad := range []string{
		"http://bucket", "s3://", "s3://key:secret@bucket", "s3://b?endpoint=ftp://x", "s3://b?path_style=maybe", "s3://b?acl=public",
	} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) = nil error, want a refusal", bad)
		}
	}
}

// A job's input is deleted while the next job's input is put: on a
// filesystem-backed server (versitygw posix) foldered names made such puts
// fail ("Existing Object is a directory") when the delete emptied the folder.
func TestPutsDoNotRaceWithDeletes(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("x"), 30000)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range 200 {
		key := connector.InputBlobKey(strconv.Itoa(i))
		if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data)), time.Hour); err != nil {
			t.Fatalf("put %d while earlier inputs are deleted: %v", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Delete(ctx, key); err != nil {
				t.Errorf("delete %s: %v", key, err)
			}
		}()
	}
}
