package compresscli

import (
	"net/url"
	"path/filepath"
	"testing"
)

// The same work is the same Idempotency-Key on every run; other files,
// another order or other options are other work.
func TestBatchKeyIsTheSameForTheSameWorkOnly(t *testing.T) {
	a := &file{Path: "photos/a.png", Hash: "aa"}
	b := &file{Path: "other/b.png", Hash: "bb"}
	k := batchKey([]*file{a, b}, nil)
	if k != batchKey([]*file{{Path: "elsewhere/a.png", Hash: "aa"}, {Path: "b.png", Hash: "bb"}}, nil) {
		t.Error("the same content and names gave another key")
	}
	for name, other := range map[string]string{
		"order":   batchKey([]*file{b, a}, nil),
		"content": batchKey([]*file{a, {Path: "b.png", Hash: "cc"}}, nil),
		"options": batchKey([]*file{a, b}, url.Values{"resize": {"1600x"}}),
	} {
		if other == k {
			t.Errorf("another %s gave the same key %s", name, k)
		}
	}
	if len(k) > 255 {
		t.Errorf("key of %d characters; the API takes 255", len(k))
	}
}

// A batch an earlier run was sending is sent again whole, under its key,
// before anything else; one whose files changed is forgotten.
func TestAPendingBatchIsResentWithTheSameFilesOrForgotten(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, hash string) *file {
		p := filepath.Join(dir, name)
		return &file{Path: p, Real: p, Hash: hash}
	}
	a, b, c, d := mk("a.png", "aa"), mk("b.png", "bb"), mk("c.png", "cc"), mk("d.png", "dd")
	st := &state{Files: map[string]*fileState{}}
	st.pend(batchKey([]*file{b, c}, nil), []*file{b, c})
	changed := mk("d.png", "d-before")
	st.pend(batchKey([]*file{changed}, nil), []*file{changed})
	r := &run{st: st}

	got := r.resend([]*file{a, c, b, d})
	if len(got) != 1 || len(got[0]) != 2 || got[0][0] != b || got[0][1] != c {
		t.Fatalf("resend = %v; want [b c] in the order first sent", got)
	}
	if len(st.Pending) != 1 {
		t.Errorf("pending %v; want the batch whose file changed forgotten", st.Pending)
	}
}
