package worker_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	_ "golang.org/x/image/webp"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// Transforms through the live API: resize, convert, preserve
// and HEIC input, in the one job, for one credit. They need libvips; they
// skip without it, and .ci/transforms.sh fails on a skip.

type transformedJob struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	DeduplicatedFrom string `json:"deduplicated_from"`
	Input            struct {
		Type          string `json:"type"`
		Width, Height int
	} `json:"input"`
	Result *struct {
		Type          string `json:"type"`
		MIMEType      string `json:"mime_type"`
		Width, Height int
		Filename      string `json:"filename"`
		FileURL       string `json:"file_url"`
	} `json:"result"`
	Error *struct{ Code, Message string } `json:"error"`
}

func needVips(t *testing.T) {
	t.Helper()
	if err := imaging.Available(); err != nil {
		t.Skipf("libvips not available: %v", err)
	}
}

// transformJob posts body as JSON and waits for the job.
func (s *system) transformJob(body string) transformedJob {
	s.T.Helper()
	st, _, out := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
	return s.finishedTransform(st, out)
}

func (s *system) finishedTransform(st int, out []byte) transformedJob {
	s.T.Helper()
	var j transformedJob
	if err := json.Unmarshal(out, &j); err != nil || st != http.StatusOK || j.Status != "completed" || j.Result == nil {
		s.T.Fatalf("got %d %s; want 200 and a completed job", st, out)
	}
	return j
}

// download fetches the result and decodes its header: type and size as a
// user's image viewer would see them.
func (s *system) download(j transformedJob) (data []byte, format string, w, h int) {
	s.T.Helper()
	res, err := http.Get(j.Result.FileURL)
	if err != nil {
		s.T.Fatal(err)
	}
	defer res.Body.Close()
	data, _ = io.ReadAll(res.Body)
	info, err := imaging.Probe(data)
	if err != nil {
		s.T.Fatalf("the result of job %s does not read: %v", j.ID, err)
	}
	return data, info.Type, info.Width, info.Height
}

func TestTransformsComeOutAsAskedForOneCredit(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	cases := []struct {
		name, body string
		typ        string
		w, h       int
	}{
		{"scale", `{"image_url":"%s/photo.jpg","resize":{"method":"scale","width":160}}`, "image/jpeg", 160, 120},
		{"fit", `{"image_url":"%s/photo.png","resize":{"method":"fit","width":100,"height":100}}`, "image/png", 100, 75},
		{"cover", `{"image_url":"%s/photo.jpg","resize":{"method":"cover","width":90,"height":90}}`, "image/jpeg", 90, 90},
		{"no enlargement", `{"image_url":"%s/photo.jpg","resize":{"method":"scale","width":2000}}`, "image/jpeg", 320, 240},
		{"short form", `{"image_url":"%s/photo.jpg","resize":"x60"}`, "image/jpeg", 80, 60},
		{"to webp", `{"image_url":"%s/photo.jpg","convert":{"type":"image/webp"}}`, "image/webp", 320, 240},
		{"to avif", `{"image_url":"%s/photo.png","convert":"avif","resize":{"method":"fit","width":64,"height":64}}`, "image/avif", 64, 48},
		{"to png", `{"image_url":"%s/photo.jpg","convert":{"type":"image/png"}}`, "image/png", 320, 240},
		{"to jpeg", `{"image_url":"%s/alpha.png","convert":{"type":"image/jpeg","background":"#00ff00"}}`, "image/jpeg", 200, 200},
		{"orientation applied", `{"image_url":"%s/exif-rotate-90.jpg","resize":{"method":"scale","height":120}}`, "image/jpeg", 80, 120},
		{"heic in, jpeg out", `{"image_url":"%s/photo.heic"}`, "image/jpeg", 320, 240},
		{"flat fields, as forms send them", `{"image_url":"%s/photo.png","resize":"90x90","resize_method":"cover","resize_enlarge":"false","convert":"webp","background":"#ffffff","preserve":""}`, "image/webp", 90, 90},
	}
	for i, c := range cases {
		before := s.Credits()
		j := s.transformJob(fmt.Sprintf(c.body, s.Samples))
		_, typ, w, h := s.download(j)
		if typ != c.typ || w != c.w || h != c.h || j.Result.Type != c.typ || j.Result.MIMEType != c.typ || j.Result.Width != c.w || j.Result.Height != c.h {
			t.Errorf("%s: downloaded %s %d×%d, result says %+v; want %s %d×%d", c.name, typ, w, h, *j.Result, c.typ, c.w, c.h)
		}
		if !strings.HasSuffix(j.Result.Filename, map[string]string{"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp", "image/avif": ".avif"}[c.typ]) {
			t.Errorf("%s: file name %q does not follow the type %s", c.name, j.Result.Filename, c.typ)
		}
		if j.Input.Width == 0 || j.Input.Type == "" {
			t.Errorf("%s: the input is not described: %+v", c.name, j.Input)
		}
		if got := before - s.Credits(); got != 1 {
			t.Errorf("%s (job %d): charged %d credits, want 1", c.name, i, got)
		}
	}

	// Unfilled form fields are no options: a plain job, as today.
	j := s.transformJob(fmt.Sprintf(`{"image_url":"%s/screenshot.png","resize":"","resize_method":"","resize_enlarge":false,"convert":"","background":"","preserve":""}`, s.Samples))
	if j.Result.Type != "" || j.Result.Width != 0 || j.Result.MIMEType != "image/png" {
		t.Errorf("empty options: result %+v; want a plain PNG job", *j.Result)
	}

	// The transparent corner of alpha.png, flattened on the colour asked.
	j = s.transformJob(fmt.Sprintf(`{"image_url":"%s/alpha.png","convert":{"type":"jpeg","background":"#00ff00"},"dedupe":false}`, s.Samples))
	data, _, _, _ := s.download(j)
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(0, 0).RGBA(); r>>8 > 40 || g>>8 < 200 || b>>8 > 40 {
		t.Errorf("transparent corner is rgb(%d,%d,%d), want green", r>>8, g>>8, b>>8)
	}
}

func TestTransformOptionsOnEveryWayAJobIsMade(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}

	// Multipart: a HEIC upload and text fields.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("resize", "100x100")
	mw.WriteField("resize_method", "cover")
	mw.WriteField("convert", "webp")
	fw, _ := mw.CreateFormFile("file", "IMG_0001.HEIC")
	fw.Write(images.Read(t, "photo.heic"))
	mw.Close()
	st, _, out := s.Request("POST", "/v1/jobs?wait=20", mw.FormDataContentType(), &form, auth)
	j := s.finishedTransform(st, out)
	if _, typ, w, h := s.download(j); typ != "image/webp" || w != 100 || h != 100 || j.Input.Type != "image/heic" || j.Result.Filename != "IMG_0001.webp" {
		t.Errorf("multipart: %s %d×%d named %q from %s; want a 100×100 image/webp named IMG_0001.webp from image/heic", typ, w, h, j.Result.Filename, j.Input.Type)
	}

	// The raw-body upload's query.
	st, _, out = s.Request("POST", "/v1/jobs?wait=20&resize=x60&convert=png", "image/jpeg", bytes.NewReader(images.Read(t, "photo.jpg")), auth)
	j = s.finishedTransform(st, out)
	if _, typ, w, h := s.download(j); typ != "image/png" || w != 80 || h != 60 {
		t.Errorf("raw body: %s %d×%d; want an 80×60 image/png", typ, w, h)
	}

	// base64 JSON with a dry run first: the output it promises.
	b64 := base64.StdEncoding.EncodeToString(images.Read(t, "photo.jpg"))
	body := `{"image_base64":"` + b64 + `","resize":{"method":"fit","width":50,"height":50},"convert":{"type":"image/webp"}}`
	st, _, out = s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(body), auth)
	var dry struct {
		WouldCharge int `json:"would_charge"`
		Output      *struct {
			Type          string
			Width, Height int
		}
	}
	if json.Unmarshal(out, &dry); st != http.StatusOK || dry.Output == nil || dry.Output.Type != "image/webp" || dry.Output.Width != 50 || dry.Output.Height != 38 || dry.WouldCharge != 1 {
		t.Fatalf("dry run: %d %s; want a 50×38 image/webp that would charge 1", st, out)
	}
	before := s.Credits()
	j = s.transformJob(body)
	if j.Result.Width != dry.Output.Width || j.Result.Height != dry.Output.Height || j.Result.Type != dry.Output.Type {
		t.Errorf("the job made %+v, the dry run promised %+v", *j.Result, *dry.Output)
	}
	// Same image, same options: free. Other options: a new job, charged.
	if again := s.transformJob(body); again.DeduplicatedFrom != j.ID {
		t.Errorf("the same image and options again: deduplicated_from %q, want %q", again.DeduplicatedFrom, j.ID)
	}
	other := s.transformJob(strings.Replace(body, `"width":50`, `"width":40`, 1))
	if other.DeduplicatedFrom != "" || other.Result.Width != 40 {
		t.Errorf("other options: deduplicated_from %q, width %d; want a new 40-wide result", other.DeduplicatedFrom, other.Result.Width)
	}
	if got := before - s.Credits(); got != 2 {
		t.Errorf("charged %d credits for two distinct jobs and one repeat, want 2", got)
	}
	st, _, out = s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(body), auth)
	if json.Unmarshal(out, &dry); st != http.StatusOK || dry.WouldCharge != 0 {
		t.Errorf("dry run of a repeat: %s; want would_charge 0", out)
	}

	// A batch: its defaults, and an item's own options over them.
	req, _ := json.Marshal(map[string]any{
		"resize": map[string]any{"method": "scale", "width": 64}, "convert": "webp",
		"items": []map[string]any{
			{"image_url": s.Samples + "/photo.jpg"},
			{"image_url": s.Samples + "/photo.png", "resize": "x30", "convert": "png"},
		}})
	st, _, out = s.Request("POST", "/v1/batches", "application/json", bytes.NewReader(req), auth)
	var created systemtest.BatchView
	if json.Unmarshal(out, &created); st != http.StatusAccepted {
		t.Fatalf("batch: %d %s", st, out)
	}
	s.WaitBatch(created.ID)
	st, _, out = s.Request("GET", "/v1/batches/"+created.ID+"/jobs", "", nil, auth)
	var page struct{ Jobs []transformedJob }
	if json.Unmarshal(out, &page); st != http.StatusOK {
		t.Fatalf("batch jobs: %d %s", st, out)
	}
	want := map[string][3]any{"image/webp": {"image/webp", 64, 48}, "image/png": {"image/png", 40, 30}}
	if len(page.Jobs) != 2 {
		t.Fatalf("batch jobs: %s", out)
	}
	for _, bj := range page.Jobs {
		w, ok := want[bj.Result.Type]
		if !ok || bj.Result.Width != w[1] || bj.Result.Height != w[2] {
			t.Errorf("batch item %+v; want %v", *bj.Result, want)
		}
	}
}

func TestPreserveKeepsOnlyTheGroupsAsked(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	for _, c := range []struct {
		body                 string
		copyright, date, gps bool
	}{
		{`{"image_url":"%s/photo-exif.jpg"}`, false, false, false},
		{`{"image_url":"%s/photo-exif.jpg","preserve":["copyright"]}`, true, false, false},
		{`{"image_url":"%s/photo-exif.jpg","preserve":"creation,location","convert":"webp"}`, false, true, true},
		{`{"image_url":"%s/photo.heic","preserve":["copyright","creation"]}`, true, true, false},
	} {
		j := s.transformJob(fmt.Sprintf(c.body, s.Samples))
		data, _, w, h := s.download(j)
		has := func(s string) bool { return bytes.Contains(data, []byte(s)) }
		if has("Ada Photographer") != c.copyright || has("2024:06:01 12:34:56") != c.date {
			t.Errorf("%s: copyright kept %v, date kept %v; want %v, %v", c.body, has("Ada Photographer"), has("2024:06:01 12:34:56"), c.copyright, c.date)
		}
		if strings.Contains(c.body, "photo-exif") && (w != 240 || h != 320) {
			t.Errorf("%s: %d×%d, want 240×320 (orientation applied to the pixels)", c.body, w, h)
		}
		if gps := gpsOf(t, data); gps != c.gps {
			t.Errorf("%s: GPS kept %v, want %v", c.body, gps, c.gps)
		}
	}
}

func TestPreserveAloneStillAppliesOrientation(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	// photo.png tagged with EXIF Orientation 6 (imaging's orientedPNG,
	// rebuilt here): the API would not turn a PNG, so imgflow does.
	exif := []byte("II*\x00\x08\x00\x00\x00\x01\x00\x12\x01\x03\x00\x01\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00")
	png, err := imaging.WithMetadata(images.Read(t, "photo.png"), "image/png", exif)
	if err != nil {
		t.Fatal(err)
	}
	st, _, out := s.Request("POST", "/v1/jobs?wait=20&preserve=copyright", "image/png", bytes.NewReader(png), map[string]string{"X-API-Key": s.Key})
	j := s.finishedTransform(st, out)
	if _, typ, w, h := s.download(j); typ != "image/png" || w != 240 || h != 320 {
		t.Errorf("got %s %d×%d; want a 240×320 PNG, turned as its EXIF says", typ, w, h)
	}
}

// gpsOf reports whether an image's EXIF has a GPS IFD with entries.
func gpsOf(t *testing.T, data []byte) bool {
	t.Helper()
	// The GPS IFD pointer tag 0x8825 in either byte order, and the N of
	// the latitude reference.
	return (bytes.Contains(data, []byte{0x25, 0x88, 0x04, 0x00}) || bytes.Contains(data, []byte{0x88, 0x25, 0x00, 0x04})) &&
		bytes.Contains(data, []byte("N\x00"))
}

func TestBadTransformOptionsAre400sNamingTheFieldAndChargeNothing(t *testing.T) {
	s := startSystem(t)
	before := s.Credits()
	for _, c := range []struct{ body, field string }{
		{`"resize":{"method":"stretch","width":10}`, "resize.method"},
		{`"resize":{"method":"fit","width":100}`, "resize.height"},
		{`"resize":{"method":"cover","width":0,"height":0}`, "resize.width"},
		{`"resize":{"method":"scale"}`, "resize"},
		{`"resize":{"method":"scale","width":16385}`, "resize.width"},
		{`"resize":{"method":"fit","width":10,"height":-3}`, "resize.height"},
		{`"resize":"wide"`, "resize"},
		{`"convert":{"type":"image/gif"}`, "convert.type"},
		{`"convert":{"type":"webp","background":"red"}`, "convert.background"},
		{`"preserve":["copyright","camera"]`, "preserve"},
		{`"preserve":["copyright"],"convert":"avif"`, "preserve"},
	} {
		for _, dry := range []string{"", "&dry_run=1"} {
			st, _, out := s.Request("POST", "/v1/jobs?wait=5"+dry, "application/json",
				strings.NewReader(`{"image_url":"`+s.Samples+`/photo.jpg",`+c.body+`}`), map[string]string{"X-API-Key": s.Key})
			var e struct {
				Code    string
				Details []struct{ Field string }
			}
			json.Unmarshal(out, &e)
			if st != http.StatusBadRequest || e.Code != "invalid_input" || len(e.Details) == 0 || e.Details[0].Field != c.field {
				t.Errorf("%s%s: %d %s; want 400 invalid_input naming %s", c.body, dry, st, out, c.field)
			}
		}
	}
	if got := s.Credits(); got != before {
		t.Errorf("bad options charged %d credits", before-got)
	}
}

func TestUnreadableHEICFailsAsAnyUnreadableImage(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	before := s.Credits()
	st, _, out := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/truncated.heic"}`), map[string]string{"X-API-Key": s.Key})
	var j transformedJob
	json.Unmarshal(out, &j)
	if j.Status != "failed" || j.Error == nil || j.Error.Code != "unsupported_format" {
		t.Errorf("truncated HEIC: %d %s; want a failed job with unsupported_format", st, out)
	}
	if got := s.Credits(); got != before {
		t.Errorf("charged %d credits for an unreadable image", before-got)
	}
}

// Without libvips (IMGFLOW_LIBVIPS=off stands in for a machine without
// it, in a child process since the library loads once): a job asking for a
// transform, or sending a HEIC image, is 422 transform_unavailable and
// charged nothing; every other job works as before.
func TestWithoutLibvipsTransformsAre422AndPlainJobsWork(t *testing.T) {
	if os.Getenv(imaging.LibraryEnv) != "off" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWithoutLibvipsTransformsAre422AndPlainJobsWork$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), imaging.LibraryEnv+"=off")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestWithoutLibvipsTransformsAre422AndPlainJobsWork")) {
			t.Fatalf("without libvips: %v\n%s", err, out)
		}
		return
	}
	if !strings.HasPrefix(imaging.Status(), "transforms: off") {
		t.Errorf("the banner line says %q, want transforms off", imaging.Status())
	}
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	before := s.Credits()
	for _, c := range []struct {
		contentType string
		body        []byte
	}{
		{"application/json", []byte(`{"image_url":"` + s.Samples + `/photo.jpg","resize":"100x"}`)},
		{"application/json", []byte(`{"image_url":"` + s.Samples + `/photo.jpg","preserve":["copyright"]}`)},
		{"image/heic", images.Read(t, "photo.heic")},
	} {
		st, _, out := s.Request("POST", "/v1/jobs?wait=20", c.contentType, bytes.NewReader(c.body), auth)
		if st != http.StatusUnprocessableEntity || !bytes.Contains(out, []byte(`"code":"transform_unavailable"`)) {
			t.Errorf("%s: %d %s; want 422 transform_unavailable", c.contentType, st, out)
		}
	}
	st, _, out := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(`{"image_url":"`+s.Samples+`/photo.jpg"}`), auth)
	s.ExpectCompressed(st, out, "image/jpeg")
	if got := before - s.Credits(); got != 1 {
		t.Errorf("charged %d credits, want 1 (the plain job only)", got)
	}
}
