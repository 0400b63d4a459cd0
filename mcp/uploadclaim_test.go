package mcp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/redistest"
)

// An upload URL is single-use across replicas: while one replica reads its
// PUT, and after, another replica's PUT to the same URL is 409; a PUT that
// stored nothing (empty) leaves the URL to the next, on any replica.
func TestUploadURLIsSingleUseAcrossReplicas(t *testing.T) {
	r := redistest.New(t)
	store := redisstore.New(r.Client, redisstore.Options{Prefix: r.Prefix})
	kr, err := keyring.New("test-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	replica := func() *httptest.Server {
		u := &Uploads{Blobs: store.Blobs, Keys: kr, PublicURL: "http://imgflow.test", Claims: store.Blobs}
		u.defaults()
		s := httptest.NewServer(u)
		t.Cleanup(s.Close)
		return s
	}
	a, b := replica(), replica()
	url := func(s *httptest.Server, slot string) string {
		return s.URL + UploadPath + slot + "?token=" + kr.FileToken(uploadScope(slot), time.Now().Add(time.Minute))
	}
	put := func(target string, body io.Reader) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, target, body)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		got, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(got)
	}

	slot := strings.Repeat("ab", 16)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // before the servers close
	first := make(chan int, 1)
	go func() {
		st, _ := put(url(a, slot), pr)
		first <- st
	}()
	pw.Write([]byte("\x89PNG\r\n\x1a\n")) // replica a is reading
	if st, body := put(url(b, slot), bytes.NewReader([]byte("other bytes"))); st != http.StatusConflict || !strings.Contains(body, "upload_already_used") {
		t.Fatalf("a PUT on replica b while a reads one: %d %s; want 409 upload_already_used", st, body)
	}
	pw.Write([]byte("the rest"))
	pw.Close()
	if st := <-first; st != http.StatusOK {
		t.Fatalf("replica a's PUT: %d; want 200", st)
	}
	if st, _ := put(url(b, slot), bytes.NewReader([]byte("other bytes"))); st != http.StatusConflict {
		t.Fatalf("a PUT on replica b after a's: %d; want 409", st)
	}

	empty := strings.Repeat("cd", 16)
	if st, _ := put(url(a, empty), bytes.NewReader(nil)); st != http.StatusBadRequest {
		t.Fatalf("an empty PUT: %d; want 400", st)
	}
	if st, body := put(url(b, empty), bytes.NewReader([]byte("bytes"))); st != http.StatusOK {
		t.Fatalf("a PUT after an empty one, on another replica: %d %s; want 200", st, body)
	}
}
