package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/s3test"
)

// lockedBuffer is one process's whole output, written while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startLogged runs the built imgflow (or another program) with env added,
// its stdout and stderr into one buffer, and stops it with SIGTERM at the
// end of the test.
func startLogged(t *testing.T, out *lockedBuffer, env []string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return cmd
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 2 minutes", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A whole run of the separate commands — serve and work started while a
// passworded Redis is down, then Redis up, the S3 blob store with
// credentials, IMGFLOW_SECRET, one job with an API key — writes none of
// those secrets, in any form an operator would grep for, into any line
// the processes print.
func TestAWholeRunPrintsNoSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the commands; not in -short")
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server: the run needs a Redis with a password")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "imgflow")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	const (
		redisPassword = "redis-pa55-Zq8wKt3v"
		appSecret     = "imgflow-secret-Hn4rT7yPq2Lw9x"
	)
	s3Access, s3Secret := "AKIAWHOLERUNTEST0001", "s3-secret-Yb6Ns1Kd8Jm3Vf5Rc0Tg"
	blobStore := "s3://whole-run?endpoint=http://127.0.0.1:" + strconv.Itoa(freeLoopbackPort(t)) + "&region=us-east-1&path_style=true"
	realS3 := s3test.Binary() != ""
	if realS3 {
		s3 := s3test.New(t)
		blobStore, s3Access, s3Secret = s3.URL(), s3.AccessKey, s3.SecretKey
	}

	redisPort, upstreamPort, apiPort := freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t)
	redisURL := fmt.Sprintf("redis://:%s@127.0.0.1:%d/0", redisPassword, redisPort)
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	images := httptest.NewServer(http.FileServer(http.Dir("fixtures/images")))
	defer images.Close()

	logs := map[string]*lockedBuffer{"serve": {}, "work": {}, "upstream": {}, "redis-server": {}}
	var apiKey string
	// Registered before the processes start, this runs after they stopped
	// (SIGTERM), so their last lines are in the logs too.
	t.Cleanup(func() {
		secrets := map[string]string{
			"the Redis password": redisPassword,
			"the S3 secret key":  s3Secret,
			"IMGFLOW_SECRET":     appSecret,
			"the API key":        apiKey,
		}
		if apiKey != "" {
			secrets["the API key's second half"] = apiKey[len(apiKey)/2:]
		} else {
			delete(secrets, "the API key")
		}
		for name, out := range logs {
			if name == "redis-server" {
				continue // not imgflow's; it never sees the other secrets
			}
			text := out.String()
			if text == "" {
				t.Errorf("%s printed nothing: the check would prove nothing", name)
			}
			for kind, secret := range secrets {
				if strings.Contains(text, secret) {
					t.Errorf("%s's output holds %s", name, kind)
				}
			}
		}
	})
	env := []string{
		"REDIS_URL=" + redisURL,
		fmt.Sprintf("UPSTREAM_URL=http://127.0.0.1:%d/api", upstreamPort),
		"IMGFLOW_PUBLIC_URL=" + api,
		"IMGFLOW_SECRET=" + appSecret,
		"IMGFLOW_BLOB_STORE=" + blobStore,
		"AWS_ACCESS_KEY_ID=" + s3Access,
		"AWS_SECRET_ACCESS_KEY=" + s3Secret,
		"IMGFLOW_ALLOW_HOSTS=127.0.0.1",
		"IMGFLOW_LOG_LEVEL=debug",
	}
	startLogged(t, logs["serve"], append(env, "IMGFLOW_ADDR=127.0.0.1:"+strconv.Itoa(apiPort),
		"IMGFLOW_OPS_ADDR=127.0.0.1:"+strconv.Itoa(freeLoopbackPort(t))), bin, "serve")
	startLogged(t, logs["work"], append(env, "IMGFLOW_OPS_ADDR=127.0.0.1:"+strconv.Itoa(freeLoopbackPort(t))), bin, "work")
	// Both wait for Redis, saying so, before it exists.
	for _, name := range []string{"serve", "work"} {
		waitUntil(t, name+" logs that it waits for Redis", func() bool { return strings.Contains(logs[name].String(), "waiting") })
	}

	startLogged(t, logs["redis-server"], nil, redisServer, "--port", strconv.Itoa(redisPort), "--bind", "127.0.0.1",
		"--requirepass", redisPassword, "--save", "", "--appendonly", "no", "--dir", dir)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", redisPort), Password: redisPassword})
	defer rdb.Close()
	waitUntil(t, "redis-server answers", func() bool { return rdb.Ping(context.Background()).Err() == nil })
	apiKey, _, err = refupstream.NewLedger(rdb, refupstream.DefaultPrefix, nil).CreateAccount(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	startLogged(t, logs["upstream"], nil, bin, "upstream", "--addr", "127.0.0.1:"+strconv.Itoa(upstreamPort), "--redis", redisURL)
	waitUntil(t, "serve answers /health", func() bool {
		resp, err := http.Get(api + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	req, _ := http.NewRequest("POST", api+"/v1/jobs?wait=25", strings.NewReader(`{"image_url":"`+images.URL+`/photo.png"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case realS3 && !strings.Contains(string(body), `"status":"completed"`):
		t.Fatalf("the job did not complete with S3 up (%d): %s", resp.StatusCode, body)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		// With S3 at nothing the job is taken and the worker's S3 calls
		// fail (logged, retried): the caller's request must still be right.
		t.Fatalf("the job request was refused (%d): %s", resp.StatusCode, body)
	}
	t.Logf("job answer %d (S3 %v): %.300s", resp.StatusCode, map[bool]string{true: "versitygw", false: "at a closed port"}[realS3], body)
	if strings.Contains(string(body), apiKey) || strings.Contains(string(body), s3Secret) || strings.Contains(string(body), redisPassword) {
		t.Error("the API's answer holds a secret")
	}

}
