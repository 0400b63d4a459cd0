package compresscli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests run the command against a real `imgflow dev`, built from this
// module and started once for the package: the API, the worker, the
// reference compression API and its credit ledger, over loopback HTTP, as
// a user runs it. Each test reads the demo key's credits before and after.

var dev struct {
	bin      string // the imgflow binary
	api      string
	upstream string
	key      string
	logs     *lockedBuffer
	err      error
}

func TestMain(m *testing.M) {
	code := func() int {
		tmp, err := os.MkdirTemp("", "compresscli-dev-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		stop, err := startDev(tmp)
		if err != nil {
			fmt.Fprintln(os.Stderr, "compresscli tests: imgflow dev did not start:", err)
			if dev.logs != nil {
				fmt.Fprintln(os.Stderr, dev.logs.String())
			}
			return 1
		}
		defer stop()
		return m.Run()
	}()
	os.Exit(code)
}

// startDev builds imgflow and starts `imgflow dev` on free loopback ports.
func startDev(tmp string) (stop func(), err error) {
	dev.bin = filepath.Join(tmp, "imgflow")
	build := exec.Command("go", "build", "-o", dev.bin, ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	apiAddr, upAddr := freeAddr(), freeAddr()
	key := make([]byte, 16)
	rand.Read(key)
	dev.key = "cli-test-" + hex.EncodeToString(key)
	dev.api, dev.upstream = "http://"+apiAddr, "http://"+upAddr+"/api"
	dev.logs = &lockedBuffer{}
	cmd := exec.Command(dev.bin, "dev", "--addr", apiAddr, "--upstream-addr", upAddr, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "IMGFLOW_DEMO_KEY="+dev.key, "REDIS_URL=")
	cmd.Stdout, cmd.Stderr = dev.logs, dev.logs
	dieWithTests(cmd)
	runtime.LockOSThread() // Pdeathsig follows the thread that started the child
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if res, err := http.Get(dev.api + "/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return stop, nil
			}
		}
		if cmd.ProcessState != nil {
			break
		}
	}
	stop()
	return nil, fmt.Errorf("no answer from %s/health", dev.api)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// credits is the demo key's balance, read from the reference compression
// API itself (never cached).
func credits(t *testing.T) int64 {
	t.Helper()
	res, err := http.Post(dev.upstream+"/validate", "application/json", strings.NewReader(`{"api_key":"`+dev.key+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		CreditsRemaining *int64 `json:"credits_remaining"`
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || v.CreditsRemaining == nil {
		t.Fatalf("validate: %d, %v", res.StatusCode, err)
	}
	return *v.CreditsRemaining
}

// settle waits until the key has no job queued or running, so that
// credits are final (a batch the test left behind would still charge).
func settle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		busy := false
		for _, status := range []string{"queued", "processing"} {
			req, _ := http.NewRequest(http.MethodGet, dev.api+"/v1/jobs?limit=1&status="+status, nil)
			req.Header.Set("X-API-Key", dev.key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var page struct{ Jobs []json.RawMessage }
			json.NewDecoder(res.Body).Decode(&page)
			res.Body.Close()
			busy = busy || len(page.Jobs) > 0
		}
		if !busy {
			return
		}
	}
	t.Fatal("jobs still running after a minute")
}

// compress runs the command in this process against dev, with ctx.
func compress(ctx context.Context, o Options) (Summary, string, string, error) {
	var stdout, stderr bytes.Buffer
	if o.API == "" {
		o.API = dev.api
	}
	o.Key, o.Stdout, o.Stderr = dev.key, &stdout, &stderr
	o.PollEvery = 50 * time.Millisecond
	sum, err := Run(ctx, o)
	return sum, stdout.String(), stderr.String(), err
}

// writeImages writes n distinct PNG files (stored without compression, so
// that each compresses) named name-%02d.png under dir; seed keeps them
// distinct from other tests' (the API would reuse a result for equal
// content).
func writeImages(t *testing.T, dir, seed string, n int) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	salt := make([]byte, 8)
	rand.Read(salt)
	var paths []string
	for i := range n {
		img := image.NewRGBA(image.Rect(0, 0, 96, 64))
		for y := range 64 {
			for x := range 96 {
				img.Set(x, y, color.RGBA{uint8(x * 2), uint8(y * 3), salt[(x+y+i)%8] ^ uint8(i), 255})
			}
		}
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.NoCompression}
		if err := enc.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("%s-%02d.png", seed, i))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
