package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
)

// Where sets meet the other features: every way a request carries its
// image (JSON with a URL or base64, multipart, the image as the body), on
// POST /v1/jobs and POST /v1/jobs/variants, with variants as JSON or in
// the short form, with targets, and the refusals of each.

// setRequest is one way of asking for a set of the image photo with
// variants (JSON text, or the short form where the carrier takes text).
type setRequest func(s *system, photo []byte, variants string) (contentType string, body io.Reader, query string)

var setCarriers = map[string]setRequest{
	"json url": func(s *system, _ []byte, variants string) (string, io.Reader, string) {
		return "application/json", strings.NewReader(fmt.Sprintf(`{"image_url": %q, "filename": "photo.jpg", "variants": %s}`, s.Samples+"/photo.jpg", variants)), ""
	},
	"json base64": func(_ *system, photo []byte, variants string) (string, io.Reader, string) {
		return "application/json", strings.NewReader(fmt.Sprintf(`{"image_base64": %q, "filename": "photo.jpg", "variants": %s}`, base64.StdEncoding.EncodeToString(photo), variants)), ""
	},
	"multipart": func(_ *system, photo []byte, variants string) (string, io.Reader, string) {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		fw, _ := mw.CreateFormFile("file", "photo.jpg")
		fw.Write(photo)
		mw.WriteField("variants", variants)
		mw.Close()
		return mw.FormDataContentType(), &form, ""
	},
	"raw body": func(_ *system, photo []byte, variants string) (string, io.Reader, string) {
		return "image/jpeg", bytes.NewReader(photo), "&filename=photo.jpg&variants=" + url.QueryEscape(variants)
	},
}

// textCarriers take variants as text, so the short form too.
var textCarriers = []string{"multipart", "raw body"}

func (s *system) askSet(t *testing.T, path, carrier string, photo []byte, variants string) (int, setView, []byte) {
	t.Helper()
	ct, body, query := setCarriers[carrier](s, photo, variants)
	st, _, data := s.Request("POST", path+"?wait=20"+query, ct, body, map[string]string{"X-API-Key": s.Key})
	var v setView
	if st < 300 {
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s %s: %d %s: %v", carrier, path, st, data, err)
		}
	}
	return st, v, data
}

func TestVariantSetFromEveryInputOnBothPaths(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	photo := images.Read(t, "photo.jpg")
	json3 := `[{"id": "sm", "resize": "32x", "convert": "webp"}, {"id": "md", "resize": "64x"}, {"id": "lg", "resize": "x96"}]`
	short3 := "sm=32w:webp,md=64w,lg=x96"
	type want struct {
		width int
		mime  string
	}
	wants := map[string]want{"sm": {32, "image/webp"}, "md": {64, "image/jpeg"}, "lg": {0, "image/jpeg"}}
	for _, path := range []string{"/v1/jobs", "/v1/jobs/variants"} {
		for carrier := range setCarriers {
			forms := map[string]string{"json": json3}
			for _, c := range textCarriers {
				if c == carrier {
					forms["short"] = short3
				}
			}
			for form, variants := range forms {
				st, v, data := s.askSet(t, path, carrier, photo, variants)
				if st != http.StatusOK || v.Status != "finished" || v.Counts.Completed != 3 {
					t.Errorf("%s %s (%s variants): %d %s; want a finished set of 3", carrier, path, form, st, data)
					continue
				}
				for id, w := range wants {
					j := v.Variants[id]
					if j.Result == nil || j.Result.MIMEType != w.mime || (w.width > 0 && j.Result.Width != w.width) || (w.width == 0 && j.Result.Height != 96) {
						t.Errorf("%s %s (%s): variant %s = %+v; want %+v", carrier, path, form, id, j.Result, w)
					}
				}
				if f := v.Variants["sm"].Result; f != nil && f.Filename != "photo-sm.webp" {
					t.Errorf("%s %s (%s): sm is named %q; want photo-sm.webp", carrier, path, form, f.Filename)
				}
				if v.Srcset == "" || v.Picture == "" {
					t.Errorf("%s %s (%s): srcset %q, picture %q; want both", carrier, path, form, v.Srcset, v.Picture)
				}
			}
		}
	}
}

func TestVariantSetTargetsOnEveryInput(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	photo := images.Read(t, "photo.jpg")
	const maxBytes = 4000
	variants := fmt.Sprintf(`[{"id": "small", "resize": "200x", "target": {"max_bytes": %d}}, {"id": "free", "resize": "200x", "target": "4KB"}]`, maxBytes)
	for carrier := range setCarriers {
		st, v, data := s.askSet(t, "/v1/jobs/variants", carrier, photo, variants)
		if st != http.StatusOK || v.Counts.Completed != 2 {
			t.Errorf("%s: %d %s; want a finished set of 2", carrier, st, data)
			continue
		}
		for id, j := range v.Variants {
			if j.Result == nil {
				t.Errorf("%s: variant %s has no result", carrier, id)
				continue
			}
			res, err := http.Get(j.Result.FileURL)
			if err != nil {
				t.Fatal(err)
			}
			file, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if len(file) == 0 || len(file) > maxBytes {
				t.Errorf("%s: variant %s is %d bytes; want at most %d", carrier, id, len(file), maxBytes)
			}
		}
	}
}

func TestVariantSetRefusalsOnEveryInput(t *testing.T) {
	s := startSystem(t)
	photo := images.Read(t, "photo.jpg")
	type refusal struct{ variants, field, says string }
	every := []refusal{
		{`[{"id": "sm", "resize": "320x"}, {"id": "sm", "resize": "640x"}]`, "variants[1].id", `"sm" names two variants`},
		{`[]`, "variants", "1 to 10"},
		{`[{"id": "sm", "resize": "320x", "target": "a lot"}]`, "variants[].target", "must be a size"},
	}
	short := []refusal{
		{"sm=320w,sm=640w", "variants[1].id", `"sm" names two variants`},
		{"sm", "variants", "is not ID=SIZE"},
		{"sm=wide", "variants", `the size "wide"`},
		{"sm=320w:gif", "variants[0].convert.type", "webp, avif, jpeg or png"},
		{"SM=320w", "variants[0].id", "a-z"},
	}
	for _, path := range []string{"/v1/jobs", "/v1/jobs/variants"} {
		for carrier := range setCarriers {
			cases := every
			for _, c := range textCarriers {
				if c == carrier {
					cases = append(append([]refusal{}, every...), short...)
				}
			}
			for _, c := range cases {
				st, _, data := s.askSet(t, path, carrier, photo, c.variants)
				var e struct {
					Code    string
					Error   string
					Details []struct{ Field string }
				}
				json.Unmarshal(data, &e)
				if st != http.StatusBadRequest || e.Code != "invalid_input" || len(e.Details) == 0 || e.Details[0].Field != c.field || !strings.Contains(e.Error, c.says) {
					t.Errorf("%s %s, variants %s: %d %s; want 400 invalid_input on %s saying %q", carrier, path, c.variants, st, data, c.field, c.says)
				}
			}
		}
	}
}

func TestVariantSetPathRefusesWhatIsNotASet(t *testing.T) {
	s := startSystem(t)
	photo := images.Read(t, "photo.jpg")
	key := map[string]string{"X-API-Key": s.Key}
	for name, c := range map[string]struct {
		contentType, query string
		body               []byte
	}{
		"json without variants":   {"application/json", "", []byte(fmt.Sprintf(`{"image_url": %q}`, s.Samples+"/photo.jpg"))},
		"raw without variants":    {"image/jpeg", "", photo},
		"raw with empty variants": {"image/jpeg", "?variants=", photo},
	} {
		st, _, data := s.Request("POST", "/v1/jobs/variants"+c.query, c.contentType, bytes.NewReader(c.body), key)
		if st != http.StatusBadRequest || !strings.Contains(string(data), `"field":"variants"`) {
			t.Errorf("%s: %d %s; want 400 naming variants", name, st, data)
		}
	}
	// A raw body's own transform beside its variants is refused, as JSON's is.
	st, _, data := s.Request("POST", "/v1/jobs?variants=sm%3D320w&target_max_bytes=9000", "image/jpeg", bytes.NewReader(photo), key)
	if st != http.StatusBadRequest || !strings.Contains(string(data), "move the request's into its variants") {
		t.Errorf("raw target beside variants: %d %s; want 400 asking to move it into the variants", st, data)
	}
	// POST /v1/jobs without variants stays a single job.
	st, _, data = s.Request("POST", "/v1/jobs?wait=20", "image/jpeg", bytes.NewReader(photo), key)
	if st != http.StatusOK || !strings.Contains(string(data), `"status":"completed"`) {
		t.Errorf("raw job: %d %s; want a completed job", st, data)
	}
}

func TestVariantSetDryRunOnTheSetPath(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	photo := images.Read(t, "photo.jpg")
	before := s.Credits()
	st, _, data := s.Request("POST", "/v1/jobs/variants?dry_run=1&variants=a%3D32w,b%3D64w:webp", "image/jpeg", bytes.NewReader(photo), map[string]string{"X-API-Key": s.Key})
	var check struct {
		WouldCharge int `json:"would_charge"`
		Variants    []struct{ ID string }
	}
	if err := json.Unmarshal(data, &check); st != http.StatusOK || err != nil || check.WouldCharge != 2 || len(check.Variants) != 2 {
		t.Errorf("dry run of a raw set: %d %s; want would_charge 2 over 2 variants", st, data)
	}
	if spent := before - s.Credits(); spent != 0 {
		t.Errorf("a dry run cost %d credits; want 0", spent)
	}
}

func TestVariantSetIncludeJobsAddsTheJobs(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	photo := images.Read(t, "photo.jpg")
	key := map[string]string{"X-API-Key": s.Key}
	for _, path := range []string{"/v1/jobs", "/v1/jobs/variants"} {
		st, _, data := s.Request("POST", path+"?wait=20&include=jobs&variants=a%3D32w,b%3D64w", "image/jpeg", bytes.NewReader(photo), key)
		var v struct {
			Jobs []struct{ Variant string }
		}
		json.Unmarshal(data, &v)
		if st != http.StatusOK || len(v.Jobs) != 2 || v.Jobs[0].Variant != "a" || v.Jobs[1].Variant != "b" {
			t.Errorf("%s?include=jobs: %d %s; want the set with its 2 jobs in order", path, st, data)
		}
		if st, _, data := s.Request("POST", path+"?include=data&variants=a%3D32w", "image/jpeg", bytes.NewReader(photo), key); st != http.StatusBadRequest || !strings.Contains(string(data), `"field":"include"`) {
			t.Errorf("%s?include=data for a set: %d %s; want 400 naming include", path, st, data)
		}
	}
	if st, _, data := s.Request("POST", "/v1/jobs?include=jobs", "image/jpeg", bytes.NewReader(photo), key); st != http.StatusBadRequest || !strings.Contains(string(data), `"field":"include"`) {
		t.Errorf("include=jobs for a single job: %d %s; want 400 naming include", st, data)
	}
}
