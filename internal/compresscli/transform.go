package compresscli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
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
}

// IsZero reports whether the run only compresses.
func (t Transform) IsZero() bool { return t == Transform{} }

var resizeText = regexp.MustCompile(`^([0-9]+x[0-9]*|x[0-9]+)$`)

// check refuses what the API would refuse for every file, before sending
// any; the API checks again.
func (t Transform) check(inPlace bool) error {
	if t.Resize != "" && !resizeText.MatchString(strings.ToLower(t.Resize)) {
		return fmt.Errorf("--resize %q: give WIDTHx, xHEIGHT or WIDTHxHEIGHT in pixels, such as 1600x", t.Resize)
	}
	if t.ResizeMethod != "" && t.Resize == "" {
		return errors.New("--resize-method needs --resize")
	}
	switch strings.ToLower(t.ResizeMethod) {
	case "", "scale", "fit", "cover":
	default:
		return fmt.Errorf("--resize-method %q: use scale, fit or cover", t.ResizeMethod)
	}
	if t.Convert != "" && extOf(t.Convert) == "" {
		return fmt.Errorf("--convert %q: use webp, avif, jpeg or png", t.Convert)
	}
	if t.Convert != "" && inPlace {
		return errors.New("--convert changes each file's type: use --out DIR, not --in-place")
	}
	return nil
}

// fields are the batch's text fields.
func (t Transform) fields() [][2]string {
	var out [][2]string
	for _, f := range [][2]string{{"resize", t.Resize}, {"resize_method", t.ResizeMethod}, {"convert", t.Convert}, {"preserve", t.Preserve}} {
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

// destPath is where a file's result goes: dest with the extension of the
// result's type, which a conversion (or a HEIC input) changes.
func destPath(dest, mimeType string) string {
	ext := extOf(mimeType)
	if ext == "" {
		return dest
	}
	cur := strings.ToLower(filepath.Ext(dest))
	if cur == ext || (ext == ".jpg" && cur == ".jpeg") {
		return dest
	}
	return strings.TrimSuffix(dest, filepath.Ext(dest)) + ext
}

// extOf is the file extension of a type, given short (webp) or as a media
// type (image/webp).
func extOf(typ string) string {
	switch strings.TrimPrefix(strings.ToLower(typ), "image/") {
	case "webp":
		return ".webp"
	case "avif":
		return ".avif"
	case "jpeg", "jpg":
		return ".jpg"
	case "png":
		return ".png"
	}
	return ""
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

// outputPath is where a file's result is expected before the API tells its
// type: the converted type's extension, JPEG's for a HEIC file, else path.
func (t Transform) outputPath(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); {
	case t.Convert != "":
		return destPath(path, t.Convert)
	case ext == ".heic" || ext == ".heif":
		return destPath(path, "jpeg")
	}
	return path
}
