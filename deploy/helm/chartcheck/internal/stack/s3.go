package stack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Counter is a reverse proxy in front of versitygw that counts requests
// by method (and multi-object delete, a POST ?delete, apart).
type s3Counter struct {
	srv *http.Server
	mu  sync.Mutex
	n   map[string]int64
}

func (c *s3Counter) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	key := r.Method
	if _, ok := r.URL.Query()["delete"]; ok && r.Method == http.MethodPost {
		key = "POST ?delete"
	}
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
	next.ServeHTTP(w, r)
}

// S3Requests is how many requests each method sent to S3 so far.
func (s *Stack) S3Requests() map[string]int64 {
	out := map[string]int64{}
	if s.s3 == nil {
		return out
	}
	s.s3.mu.Lock()
	defer s.s3.mu.Unlock()
	for k, v := range s.s3.n {
		out[k] = v
	}
	return out
}

// FormatS3 prints counts per job, sorted by method.
func FormatS3(before, after map[string]int64, jobs int) string {
	var keys []string
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	var total int64
	for _, k := range keys {
		d := after[k] - before[k]
		total += d
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(d)/float64(jobs)))
	}
	return fmt.Sprintf("%.2f (%s)", float64(total)/float64(jobs), strings.Join(parts, ", "))
}

// startS3 runs versitygw on a free port with a bucket, and the counting
// proxy before it; it returns the variables that point imgflow at it.
func (s *Stack) startS3(ctx context.Context) ([]string, error) {
	gwPort := FreePort()
	access, secretKey, bucket := "imgflowstack", "imgflowstack-secret-key", "imgflow"
	root, sidecar := filepath.Join(s.Dir, "s3root"), filepath.Join(s.Dir, "s3sidecar")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(sidecar, 0o755)
	if err := s.start("versitygw", nil, s.opts.VersityGW, "--access", access, "--secret", secretKey,
		"--port", fmt.Sprintf("127.0.0.1:%d", gwPort), "--quiet", "posix", "--sidecar", sidecar, root); err != nil {
		return nil, err
	}
	mc, err := minio.New(fmt.Sprintf("127.0.0.1:%d", gwPort), &minio.Options{Creds: credentials.NewStaticV4(access, secretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, err
	}
	if err := WaitFor(ctx, "versitygw's bucket", func() (bool, error) {
		return mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: "us-east-1"}) == nil, nil
	}); err != nil {
		return nil, err
	}
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", gwPort))
	proxy := httputil.NewSingleHostReverseProxy(target)
	s.s3 = &s3Counter{n: map[string]int64{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.s3.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.s3.ServeHTTP(w, r, proxy)
	})}
	go s.s3.srv.Serve(ln)
	endpoint := "http://" + ln.Addr().String()
	s.secrets = append(s.secrets, heldSecret{"the S3 secret key", secretKey})
	return []string{
		"IMGFLOW_BLOB_STORE=s3://" + bucket + "?endpoint=" + endpoint + "&region=us-east-1&path_style=true",
		"AWS_ACCESS_KEY_ID=" + access,
		"AWS_SECRET_ACCESS_KEY=" + secretKey,
	}, nil
}
