package compresscli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// With --variants each file becomes a responsive set (POST /v1/jobs with
// "variants"): one upload, one credit per variant, and a result per
// variant written under --out as name-ID.ext (photo.jpg, sm: photo-sm.webp),
// names given by connector.Names' rules as every other result's:
//
//	imgflow compress --out web/ --variants sm=320w,md=800w,lg=1600w:webp photos/
//	imgflow compress --out web/ --variants variants.json photos/
//
// Each set is sent under an Idempotency-Key made from the file's content
// and the variants, and each variant is deduplicated by the API: a run
// again after Ctrl-C charges nothing twice.

// ParseVariants reads --variants: a JSON file (the API's "variants"
// array), or the short form of connector.ParseVariantSpec, ID=SIZE[:TYPE],…
// where SIZE is 320w (width), x480 (height) or 320x480 (a box, fitted) and
// TYPE webp, avif, jpeg or png. The set is checked by the API's own rules.
func ParseVariants(spec string) ([]connector.Variant, error) {
	spec = strings.TrimSpace(spec)
	var vs []connector.Variant
	if strings.HasSuffix(strings.ToLower(spec), ".json") || strings.HasPrefix(spec, "[") {
		data := []byte(spec)
		if !strings.HasPrefix(spec, "[") {
			var err error
			if data, err = os.ReadFile(spec); err != nil {
				return nil, &UsageError{"--variants: " + err.Error()}
			}
		}
		if err := json.Unmarshal(data, &vs); err != nil {
			return nil, &UsageError{"--variants: " + reasonOf(err)}
		}
	} else {
		var err error
		if vs, err = connector.ParseVariantSpec("--variants", spec); err != nil {
			return nil, &UsageError{reasonOf(err)}
		}
	}
	if err := connector.NormalizeVariants(vs); err != nil {
		return nil, &UsageError{"--variants: " + reasonOf(err)}
	}
	return vs, nil
}

func reasonOf(err error) string {
	if e := connector.AsError(err); e != nil && e.Message != "" {
		return e.Message
	}
	return err.Error()
}

// setAnswer is the part of a set's answer the command reads.
type setAnswer struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Variants map[string]*job `json:"variants"`
	Srcset   string          `json:"srcset"`
}

// runVariants sends each file as a set and writes its variants.
func (r *run) runVariants(ctx context.Context, files []*file) error {
	fields, _ := json.Marshal(r.o.Variants)
	for _, f := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := hashFile(f); err != nil {
			r.report(result{File: f.Path, Status: "failed", ErrorCode: "unreadable", Error: reason(err)})
			continue
		}
		set, err := r.sendSet(ctx, f, fields)
		if err != nil {
			var ue *UnreachableError
			if ctx.Err() != nil || asUnreachable(err, &ue) {
				return err
			}
			r.report(result{File: f.Path, Status: "failed", ErrorCode: "refused", Error: err.Error()})
			continue
		}
		for _, v := range r.o.Variants {
			j := set.Variants[v.ID]
			if j == nil || j.Status != "completed" || j.Result == nil {
				res := result{File: f.Path + "#" + v.ID, Status: "failed", ErrorCode: "failed", Error: "the variant failed"}
				if j != nil && j.Error != nil {
					res.ErrorCode, res.Error = j.Error.Code, j.Error.Message
				}
				r.report(res)
				continue
			}
			base := r.outPath(f)
			name := strings.TrimSuffix(base, filepath.Ext(base)) + "-" + v.ID + filepath.Ext(base)
			dest := r.names.Claim(withType(name, j.Result.MIMEType))
			tmp, err := r.c.download(ctx, j, dest)
			if err == nil {
				err = install(tmp, dest, f.Info, r.o.KeepMtime)
			}
			if err != nil {
				r.report(result{File: f.Path + "#" + v.ID, Status: "failed", ErrorCode: "write_failed", Error: err.Error()})
				continue
			}
			r.report(result{File: f.Path + "#" + v.ID, Status: "compressed", OriginalSize: f.Size, CompressedSize: j.Result.CompressedSize, Output: dest})
		}
	}
	return nil
}

func asUnreachable(err error, ue **UnreachableError) bool {
	u, ok := err.(*UnreachableError)
	*ue = u
	return ok
}

// sendSet uploads f with the variants and waits for the set to finish.
func (r *run) sendSet(ctx context.Context, f *file, variants []byte) (*setAnswer, error) {
	data, err := os.ReadFile(f.Real)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte(f.Hash))
	h.Write(variants)
	key := "imgflow-compress-set-" + hex.EncodeToString(h.Sum(nil))[:40]
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("variants", string(variants))
	part, _ := mw.CreateFormFile("file", filepath.Base(f.Path))
	part.Write(data)
	mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.c.api+"/v1/jobs?wait=20", &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Idempotency-Key", key)
	var set setAnswer
	if err := r.c.do(req, http.StatusAccepted, &set); err != nil {
		return nil, err
	}
	for set.Status != "finished" {
		if err := pause(ctx, r.o.PollEvery); err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.c.api+"/v1/batches/"+url.PathEscape(set.ID), nil)
		if err != nil {
			return nil, err
		}
		if err := r.c.do(req, http.StatusOK, &set); err != nil {
			return nil, err
		}
	}
	return &set, nil
}
