package connector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Transform is what a job does to the image before the one call of the
// compression API: resize it, convert it to another type, and keep chosen
// groups of its metadata. It costs nothing on top of the job's credit. The
// zero Transform changes nothing (a job without options). The image library
// that applies it lives in connector/imaging.
type Transform struct {
	Resize   *Resize      `json:"resize,omitempty"`
	Convert  *Convert     `json:"convert,omitempty"`
	Preserve PreserveList `json:"preserve,omitempty"`
	// Target fits the result under a number of bytes (target.go).
	Target *Target `json:"target,omitempty"`
}

// PreserveList is the metadata groups to keep. JSON takes an array or one
// string, comma-separated ("copyright,creation"), as form-shaped platforms
// send it.
type PreserveList []string

func (p *PreserveList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*p = list
		return nil
	}
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return fieldErr("preserve", "must be a list of copyright, creation, location")
	}
	*p = ParsePreserveText(text)
	return nil
}

// ParsePreserveText splits a comma-separated list of groups.
func ParsePreserveText(text string) PreserveList {
	var list PreserveList
	for _, g := range strings.Split(text, ",") {
		if g = strings.TrimSpace(g); g != "" {
			list = append(list, g)
		}
	}
	return list
}

// Resize methods.
const (
	ResizeScale = "scale" // one side given, the other keeps the proportions
	ResizeFit   = "fit"   // fits inside the box, proportions kept
	ResizeCover = "cover" // fills the box exactly, cropped around the most interesting part
)

// MaxSide is the largest side a resize may ask for, in pixels.
const MaxSide = 16384

// Resize says how the image's dimensions change. It never enlarges unless
// Enlarge is set.
type Resize struct {
	Method  string `json:"method"`
	Width   int    `json:"width,omitempty"`
	Height  int    `json:"height,omitempty"`
	Enlarge bool   `json:"enlarge,omitempty"`
}

// Convert says which type the result has; Background (#rrggbb, white by
// default) fills transparency when that type has none (JPEG).
type Convert struct {
	Type       string `json:"type"`
	Background string `json:"background,omitempty"`
}

// Metadata groups a job may keep (Transform.Preserve).
const (
	PreserveCopyright = "copyright" // EXIF copyright and artist
	PreserveCreation  = "creation"  // the original date and time
	PreserveLocation  = "location"  // GPS
)

// PreserveGroups are the groups Transform.Preserve may name, in order.
var PreserveGroups = []string{PreserveCopyright, PreserveCreation, PreserveLocation}

// ConvertTypes are the types a result may be converted to.
var ConvertTypes = []string{"image/webp", "image/avif", "image/jpeg", "image/png"}

// ETRANSFORMOFF: the job asks for a transform and this imgflow runs without
// its image library (libvips). 422, nothing charged.
const ETRANSFORMOFF ErrorCode = "transform_unavailable"

// EMETADATA: the job keeps metadata (preserve) and the image's metadata is
// over the bounds imgflow reads or a result carries. 422, nothing charged.
const EMETADATA ErrorCode = "metadata_too_large"

// ETRANSFORMTIME: the transform ran out of its time and was stopped; the
// same image and options would only run out again. 422, nothing charged.
const ETRANSFORMTIME ErrorCode = "transform_timeout"

// IsZero reports whether t changes nothing.
func (t Transform) IsZero() bool {
	return t.Resize == nil && t.Convert == nil && len(t.Preserve) == 0 && t.Target == nil
}

var hexColour = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// Normalize checks t and puts it in canonical form (lower-case method and
// type, full media types, sorted and unique preserve groups). Every error
// is EINVALID naming the field (prefix: "resize", "convert" or "preserve",
// or prefix+"." when the options are a batch item's).
func (t *Transform) Normalize(prefix string) error {
	if r := t.Resize; r != nil {
		r.Method = strings.ToLower(strings.TrimSpace(r.Method))
		if r.Method == "" {
			r.Method = ResizeFit
		}
		switch r.Method {
		case ResizeScale:
			if (r.Width == 0) == (r.Height == 0) {
				return fieldErr(prefix+"resize", "scale takes exactly one side: width or height")
			}
		case ResizeFit, ResizeCover:
			if r.Width == 0 || r.Height == 0 {
				side := "width"
				if r.Width != 0 {
					side = "height"
				}
				return fieldErr(prefix+"resize."+side, fmt.Sprintf("%s needs both width and height, each at least 1", r.Method))
			}
		default:
			return fieldErr(prefix+"resize.method", fmt.Sprintf("must be scale, fit or cover (got %q)", r.Method))
		}
		for _, s := range []struct {
			name string
			v    int
		}{{"width", r.Width}, {"height", r.Height}} {
			if s.v < 0 || s.v > MaxSide {
				return fieldErr(prefix+"resize."+s.name, fmt.Sprintf("must be from 1 to %d pixels (got %d)", MaxSide, s.v))
			}
		}
	}
	if c := t.Convert; c != nil {
		c.Type = ConvertTypeOf(c.Type)
		if !slices.Contains(ConvertTypes, c.Type) {
			return fieldErr(prefix+"convert.type", fmt.Sprintf("must be webp, avif, jpeg or png (as image/webp, ... too; got %q)", c.Type))
		}
		if c.Background != "" && !hexColour.MatchString(c.Background) {
			return fieldErr(prefix+"convert.background", fmt.Sprintf("must be a colour as #rrggbb (got %q)", c.Background))
		}
		c.Background = strings.ToLower(c.Background)
	}
	var groups PreserveList
	for _, g := range t.Preserve {
		g = strings.ToLower(strings.TrimSpace(g))
		if g == "" {
			continue
		}
		if !slices.Contains(PreserveGroups, g) {
			return fieldErr(prefix+"preserve", fmt.Sprintf("unknown group %q: use copyright, creation or location", g))
		}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	t.Preserve = groups
	if t.Target != nil {
		return t.Target.normalize(prefix)
	}
	return nil
}

// ConvertTypeOf turns a short name (webp, jpg) into its media type; other
// values come back lower-cased, for Normalize to judge.
func ConvertTypeOf(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "webp", "avif", "png", "jpeg":
		return "image/" + s
	case "jpg", "image/jpg":
		return "image/jpeg"
	}
	return s
}

// Background is the colour transparency is flattened on: #rrggbb as three
// 0–255 values, white by default.
func (c *Convert) BackgroundRGB() [3]float64 {
	if c == nil || len(c.Background) != 7 {
		return [3]float64{255, 255, 255}
	}
	var rgb [3]float64
	for i := range rgb {
		v, _ := strconv.ParseUint(c.Background[1+2*i:3+2*i], 16, 8)
		rgb[i] = float64(v)
	}
	return rgb
}

// Canonical is a short, stable text of t, for dedupe keys: "" when t is
// zero.
func (t Transform) Canonical() string {
	if t.IsZero() {
		return ""
	}
	var b strings.Builder
	if r := t.Resize; r != nil {
		fmt.Fprintf(&b, "resize=%s,%d,%d,%t;", r.Method, r.Width, r.Height, r.Enlarge)
	}
	if c := t.Convert; c != nil {
		fmt.Fprintf(&b, "convert=%s,%s;", c.Type, c.Background)
	}
	if len(t.Preserve) > 0 {
		fmt.Fprintf(&b, "preserve=%s;", strings.Join(t.Preserve, ","))
	}
	if t.Target != nil {
		b.WriteString(t.Target.canonical())
	}
	return b.String()
}

// ParseResizeText reads the short form of a resize, as a form field, a
// query parameter or the CLI take it: "1600x" (width), "x900" (height),
// "400x400" (both); method as given ("" = scale for one side, fit for two).
func ParseResizeText(field, text, method string) (*Resize, error) {
	text = strings.TrimSpace(strings.ToLower(text))
	w, h, ok := strings.Cut(text, "x")
	if !ok {
		w = text
	}
	r := &Resize{Method: method}
	var err error
	if w != "" {
		if r.Width, err = strconv.Atoi(w); err != nil || r.Width <= 0 {
			return nil, fieldErr(field, fmt.Sprintf("must be WIDTHxHEIGHT, WIDTHx or xHEIGHT in pixels, such as 1600x (got %q)", text))
		}
	}
	if h != "" {
		if r.Height, err = strconv.Atoi(h); err != nil || r.Height <= 0 {
			return nil, fieldErr(field, fmt.Sprintf("must be WIDTHxHEIGHT, WIDTHx or xHEIGHT in pixels, such as 1600x (got %q)", text))
		}
	}
	if r.Width == 0 && r.Height == 0 {
		return nil, fieldErr(field, "needs a width or a height, such as 1600x")
	}
	if r.Method == "" {
		r.Method = ResizeScale
		if r.Width > 0 && r.Height > 0 {
			r.Method = ResizeFit
		}
	}
	return r, nil
}

func fieldErr(field, msg string) *Error {
	return &Error{Code: EINVALID, Message: field + ": " + msg, Details: []FieldError{{Field: field, Message: msg}}}
}

// UnmarshalJSON takes the object, or the short form as a string ("1600x",
// "400x400"): see ParseResizeText.
func (r *Resize) UnmarshalJSON(b []byte) error {
	var text string
	if json.Unmarshal(b, &text) == nil {
		if strings.TrimSpace(text) == "" {
			*r = Resize{} // absent
			return nil
		}
		short, err := ParseResizeText("resize", text, "")
		if err != nil {
			return err
		}
		*r = *short
		return nil
	}
	type plain Resize
	var v plain
	if err := strictObject(b, &v, "resize", "method, width, height, enlarge"); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fieldErr("resize", `must be an object such as {"method": "fit", "width": 1600, "height": 1600}, or "1600x"`)
	}
	*r = Resize(v)
	return nil
}

// UnmarshalJSON takes the object, or the type alone as a string ("webp",
// "image/webp").
func (c *Convert) UnmarshalJSON(b []byte) error {
	var text string
	if json.Unmarshal(b, &text) == nil {
		*c = Convert{Type: text}
		return nil
	}
	type plain Convert
	var v plain
	if err := strictObject(b, &v, "convert", "type, background"); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fieldErr("convert", `must be an object such as {"type": "image/webp"}, or "webp"`)
	}
	*c = Convert(v)
	return nil
}

// strictObject refuses a JSON object with a field v does not have, naming
// it as field.name (a misspelt "widht" would otherwise resize nothing).
func strictObject(b []byte, v any, field, fields string) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil {
		return nil
	}
	rest, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return nil // judged by the plain decode
	}
	name, uerr := strconv.Unquote(rest)
	if uerr != nil {
		name = rest
	}
	return fieldErr(field+"."+name, "is not a field of "+field+" (fields: "+fields+")")
}

// Clone is a deep copy of t, so that a batch's defaults shared by its
// items are never changed through one of them.
func (t Transform) Clone() Transform {
	out := Transform{Preserve: append(PreserveList(nil), t.Preserve...)}
	if t.Preserve == nil {
		out.Preserve = nil
	}
	if t.Resize != nil {
		r := *t.Resize
		out.Resize = &r
	}
	if t.Convert != nil {
		c := *t.Convert
		out.Convert = &c
	}
	out.Target = t.Target.clone()
	return out
}

// ApplyText sets t's options from text fields (a multipart form, a query
// string, the flat fields of a JSON body: see server/transforminput.go); a
// text field wins over the JSON object of the same option. Empty values are
// absent, as form-shaped platforms send unfilled fields.
func (t *Transform) ApplyText(text map[string]string) error {
	if t.Resize != nil && *t.Resize == (Resize{}) {
		t.Resize = nil // "resize": "" or {}
	}
	if t.Convert != nil && *t.Convert == (Convert{}) {
		t.Convert = nil
	}
	if v := text["resize"]; v != "" {
		var r Resize
		if err := r.UnmarshalJSON(jsonText(v)); err != nil {
			return err
		}
		t.Resize = &r
	}
	if v := text["resize_method"]; v != "" {
		if t.Resize == nil {
			return fieldErr("resize", "resize_method needs resize, such as 1600x or 400x400")
		}
		t.Resize.Method = v
	}
	if v := text["resize_enlarge"]; v != "" {
		var enlarge bool
		switch strings.ToLower(v) {
		case "true", "1":
			enlarge = true
		case "false", "0":
		default:
			return fieldErr("resize_enlarge", "must be true or false")
		}
		switch {
		case t.Resize != nil:
			t.Resize.Enlarge = enlarge
		case enlarge:
			return fieldErr("resize", "resize_enlarge needs resize, such as 1600x")
		}
		// false without resize: a form's unticked box, nothing asked
	}
	if v := text["convert"]; v != "" {
		var c Convert
		if err := c.UnmarshalJSON(jsonText(v)); err != nil {
			return err
		}
		t.Convert = &c
	}
	if v := text["background"]; v != "" {
		if t.Convert == nil {
			return fieldErr("background", "needs convert, such as jpeg: transparency is flattened when the new type has none")
		}
		t.Convert.Background = v
	}
	if v, ok := text["preserve"]; ok {
		var p PreserveList
		if err := p.UnmarshalJSON(jsonText(v)); err != nil {
			return err
		}
		t.Preserve = p
	}
	return t.applyTargetText(text)
}

// jsonText is v as JSON: itself when it is an object or array, else a
// JSON string of it.
func jsonText(v string) []byte {
	if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
		return []byte(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// ImageCheckOutput is what a dry run says a transforming job would make:
// the result's type and dimensions.
type ImageCheckOutput struct {
	Type   string `json:"type"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}
