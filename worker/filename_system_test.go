package worker_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
)

// TestAHEICJobKeepsItsInputNameAndNamesItsResult: a HEIC photo sent as
// IMG_7.heic is, in its job, input.filename IMG_7.heic (the input's own
// name) and result.filename IMG_7.jpg (the result's).
func TestAHEICJobKeepsItsInputNameAndNamesItsResult(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	b64 := base64.StdEncoding.EncodeToString(images.Read(t, "photo.heic"))
	st, _, out := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_base64":"`+b64+`","filename":"IMG_7.heic"}`), map[string]string{"X-API-Key": s.Key})
	var j struct {
		Status string `json:"status"`
		Input  struct {
			Filename string `json:"filename"`
		} `json:"input"`
		Result *struct {
			Filename string `json:"filename"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &j); err != nil || st != http.StatusOK || j.Status != "completed" || j.Result == nil {
		t.Fatalf("%d %.300s", st, out)
	}
	if j.Input.Filename != "IMG_7.heic" || j.Result.Filename != "IMG_7.jpg" {
		t.Errorf("input.filename %q, result.filename %q; want IMG_7.heic and IMG_7.jpg", j.Input.Filename, j.Result.Filename)
	}
}
