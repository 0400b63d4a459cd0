package compresscli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// Transform is what a run does to every file besides compressing it:
// resize, convert, keep metadata. It goes as the batch's own
// fields, the defaults of all its items, so each image is transformed in
// its one job, for its one credit:
//
//	imgflow compress --out web/ --resize 1600x --convert webp --preserve copyright photos/
type Transform struct {
	Resize       string // --resize: 1600x, x900 or 400x400
	ResizeMethod string // --resize-method: scale, fit or cover
	Convert      string // --convert: webp, avif, jpeg or png
	Preserve     string // --preserve: copyright,creation,location
	MaxSize      string // --max-size: 100KB, 1.5MB, 200KiB or bytes (the target)
	NoResize     bool   // --max-size-no-resize: fit by quality only
	MinScore     string // --min-score: with --max-size, the least SSIMULACRA2 score (0–100)
}

// IsZero reports whether the run only compresses.
func (t Transform) IsZero() bool { return t == Transform{} }

// UsageError is a run refused for its options before anything is sent:
// the command exits 2, as for a mistyped flag, and nothing is charged.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// check refuses, before sending any file, the options the API would refuse
// for every file: by the API's own rules (connector.Transform: ApplyText,
// then Normalize), so that the message is the API's, named by the flags.
func (t Transform) check(inPlace bool) error {
	if t.Convert != "" && inPlace {
		return &UsageError{"--convert changes each file's type: use --out DIR, not --in-place"}
	}
	if t.IsZero() {
		return nil
	}
	var ct connector.Transform
	err := ct.ApplyText(map[string]string{"resize": t.Resize, "resize_method": t.ResizeMethod,
		"convert": t.Convert, "preserve": t.Preserve, "target_max_bytes": t.MaxSize, "target_allow_resize": t.allowResize(), "target_min_score": t.MinScore})
	if err == nil {
		err = ct.Normalize("")
	}
	if err == nil {
		return nil
	}
	msg := err.Error()
	field := ""
	if e := connector.AsError(err); e != nil {
		msg = e.Message
		if len(e.Details) > 0 {
			field, msg = e.Details[0].Field, e.Details[0].Message
		}
	}
	return &UsageError{fmt.Sprintf("%s: %s", t.flagsOf(field), msg)}
}

// flagsOf names the flags (with their values) that set an API field.
func (t Transform) flagsOf(field string) string {
	root, _, _ := strings.Cut(field, ".")
	var parts []string
	add := func(flag, v string) {
		if v != "" {
			parts = append(parts, flag+" "+v)
		}
	}
	switch root {
	case "convert", "background":
		add("--convert", t.Convert)
	case "preserve":
		add("--preserve", t.Preserve)
	case "target", "target_max_bytes", "target_allow_resize", "target_min_score":
		add("--max-size", t.MaxSize)
		add("--min-score", t.MinScore)
	default:
		add("--resize", t.Resize)
		add("--resize-method", t.ResizeMethod)
	}
	if len(parts) == 0 {
		return "the options"
	}
	return strings.Join(parts, " ")
}

// fields are the batch's text fields.
func (t Transform) fields() [][2]string {
	var out [][2]string
	for _, f := range [][2]string{{"resize", t.Resize}, {"resize_method", t.ResizeMethod}, {"convert", t.Convert}, {"preserve", t.Preserve},
		{"target_max_bytes", t.MaxSize}, {"target_allow_resize", t.allowResize()}, {"target_min_score", t.MinScore}} {
		if f[1] != "" {
			out = append(out, f)
		}
	}
	return out
}

// addFields adds the transform's fields to a batch's text fields (which
// are part of its Idempotency-Key: other options, another batch).
func (t Transform) addFields(fields url.Values) url.Values {
	if t.IsZero() {
		return fields
	}
	out := url.Values{}
	for k, v := range fields {
		out[k] = append([]string(nil), v...)
	}
	for _, f := range t.fields() {
		out.Set(f[0], f[1])
	}
	return out
}

// key names the transform for the run's state file.
func (t Transform) key() string {
	return fmt.Sprintf("transform %q\n", t.fields())
}

// statePath is the run's state file for these options: the plain one
// without options, else one of its own per set of options, so that files
// done with other options (another size, another type) are not skipped.
func (t Transform) statePath(path string) string {
	if t.IsZero() {
		return path
	}
	sum := sha256.Sum256([]byte(t.key()))
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + hex.EncodeToString(sum[:6]) + ext
}

// allowResize is target_allow_resize's text: "false" with
// --max-size-no-resize and a --max-size, else unset (the API's default,
// true).
func (t Transform) allowResize() string {
	if t.NoResize && t.MaxSize != "" {
		return "false"
	}
	return ""
}
