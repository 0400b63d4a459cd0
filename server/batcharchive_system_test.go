package server_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// The archive's manifest.json is dated when the batch finished (ZIP
// tools show that date), and says when the batch was made and finished.
func TestBatchArchiveManifestCarriesTheBatchsTimes(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	st, _, body := s.Request("POST", "/v1/batches?wait=20", "application/json",
		bytes.NewReader([]byte(`{"items":[{"image_url":"`+s.Samples+`/photo.png"},{"image_url":"`+s.Samples+`/screenshot.png"}]}`)), auth)
	var b struct {
		ID         string     `json:"id"`
		Status     string     `json:"status"`
		CreatedAt  time.Time  `json:"created_at"`
		FinishedAt *time.Time `json:"finished_at"`
	}
	if err := json.Unmarshal(body, &b); err != nil || st != http.StatusOK || b.FinishedAt == nil {
		t.Fatalf("batch: %d %s; want it finished within the wait", st, body)
	}
	st, _, zipped := s.Request("GET", "/v1/batches/"+b.ID+"/archive", "", nil, auth)
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if st != http.StatusOK || err != nil {
		t.Fatalf("archive: %d %v", st, err)
	}
	for _, f := range zr.File {
		if f.Name != "manifest.json" {
			continue
		}
		if d := f.Modified.Sub(*b.FinishedAt); d < -time.Second || d > time.Second {
			t.Errorf("manifest.json dated %s; want the batch's finished_at %s", f.Modified, b.FinishedAt)
		}
		r, _ := f.Open()
		var m struct {
			CreatedAt  time.Time  `json:"created_at"`
			FinishedAt *time.Time `json:"finished_at"`
		}
		err := json.NewDecoder(r).Decode(&m)
		r.Close()
		if err != nil || !m.CreatedAt.Equal(b.CreatedAt) || m.FinishedAt == nil || !m.FinishedAt.Equal(*b.FinishedAt) {
			t.Errorf("manifest times %+v (%v); want created_at %s and finished_at %s", m, err, b.CreatedAt, b.FinishedAt)
		}
		return
	}
	t.Fatal("no manifest.json in the archive")
}
