// Package s3test gives tests a real S3-compatible server: versitygw with
// its posix backend in a temporary directory, on a free loopback port, with
// one empty bucket. Tests skip, saying how to get it, when the versitygw
// binary is not found ($IMGFLOW_VERSITYGW, then PATH, then $GOBIN or
// $GOPATH/bin). Install it once with
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// (.ci/s3.sh does that in CI).
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is a running versitygw.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Bucket    string
	// Client is a minio client of it, for checks behind the store's back.
	Client *minio.Client
}

// URL is the server's bucket as IMGFLOW_BLOB_STORE takes it.
func (s *Server) URL() string {
	return "s3://" + s.Bucket + "?endpoint=" + s.Endpoint + "&region=us-east-1&path_style=true"
}

// Binary finds versitygw, or returns "".
func Binary() string {
	if p := os.Getenv("IMGFLOW_VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	dirs := []string{os.Getenv("GOBIN")}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "versitygw"); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// New starts a server for t and stops it when t ends.
func New(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("S3 test skipped: versitygw not found; install it with: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 (or set IMGFLOW_VERSITYGW)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	root, sidecar := t.TempDir(), t.TempDir()
	s := &Server{Endpoint: "http://" + addr, AccessKey: "imgflowtest", SecretKey: "imgflowtest-" + randomHex(8), Bucket: "imgflow-test"}
	cmd := exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", addr, "--quiet",
		"posix", "--sidecar", sidecar, root)
	logs, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logs.Close() })

	s.Client, err = minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err = s.Client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: "us-east-1"})
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logs.Name())
			t.Fatalf("versitygw never made the bucket: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
