package server

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/connector/inspect"
)

// A job's transform (connector.Transform: resize, convert, preserve) comes
// as JSON objects in a JSON body, and as text in multipart parts and in the
// raw-body upload's query string, under these names:
//
//	resize          "1600x", "x900", "400x400", or the JSON object
//	resize_method   scale | fit | cover (with the short form of resize)
//	resize_enlarge  true | false
//	convert         webp | avif | jpeg | png, a media type, or the JSON object
//	background      #rrggbb, the colour transparency is flattened on
//	preserve        copyright,creation,location (comma-separated), or a JSON array
//	target          a size ("100KB", 100000) or the JSON object {"max_bytes": …}
//	target_max_bytes, target_allow_resize, target_min_score  the target's fields one by one
var transformTextFields = map[string]bool{"resize": true, "resize_method": true, "resize_enlarge": true,
	"convert": true, "background": true, "preserve": true,
	"target": true, "target_max_bytes": true, "target_allow_resize": true, "target_min_score": true}

// transformJSON is the transform's fields in a JSON body: the objects
// (resize, convert), or the flat fields platforms' forms send, named as
// the text fields above.
type transformJSON struct {
	Resize        *connector.Resize      `json:"resize"`
	ResizeMethod  string                 `json:"resize_method"`
	ResizeEnlarge *textBool              `json:"resize_enlarge"`
	Convert       *connector.Convert     `json:"convert"`
	Background    string                 `json:"background"`
	Preserve      connector.PreserveList `json:"preserve"`
	// The target as an object, a size, or its flat fields; all go to
	// ApplyText as text, so "" (an empty platform field) means none.
	Target            *textValue `json:"target"`
	TargetMaxBytes    *textValue `json:"target_max_bytes"`
	TargetAllowResize *textValue `json:"target_allow_resize"`
	TargetMinScore    *textValue `json:"target_min_score"`
}

// textValue is any JSON value as the text ApplyText reads: a string's
// contents, anything else (a number, a boolean, an object) as written.
type textValue string

func (v *textValue) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err == nil {
		*v = textValue(text)
		return nil
	}
	if string(data) == "null" {
		return nil
	}
	*v = textValue(data)
	return nil
}

// textBool is a JSON boolean, or its text ("true", "false", ""), as
// templated platform bodies send booleans; ApplyText judges the text.
type textBool string

func (b *textBool) UnmarshalJSON(data []byte) error {
	var v bool
	if err := json.Unmarshal(data, &v); err == nil {
		*b = textBool(strconv.FormatBool(v))
		return nil
	}
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fieldError("resize_enlarge", "must be true or false")
	}
	*b = textBool(text)
	return nil
}

// merged is the transform the JSON fields and the text fields say
// together, not yet checked.
func (j transformJSON) merged(text map[string]string) (connector.Transform, error) {
	t := connector.Transform{Resize: j.Resize, Convert: j.Convert, Preserve: j.Preserve}
	all := map[string]string{"resize_method": j.ResizeMethod, "background": j.Background}
	if j.ResizeEnlarge != nil {
		all["resize_enlarge"] = string(*j.ResizeEnlarge)
	}
	for name, v := range map[string]*textValue{"target": j.Target, "target_max_bytes": j.TargetMaxBytes,
		"target_allow_resize": j.TargetAllowResize, "target_min_score": j.TargetMinScore} {
		if v != nil {
			all[name] = strings.TrimSpace(string(*v))
		}
	}
	for k, v := range text {
		all[k] = v
	}
	err := t.ApplyText(all)
	return t, err
}

// setTransformText keeps a text field of the transform, read by
// resolveTransform.
func (in *jobRequest) setTransformText(name, val string) {
	if in.transformText == nil {
		in.transformText = map[string]string{}
	}
	in.transformText[name] = strings.TrimSpace(val)
}

// resolveTransform puts the request's transform together (JSON fields,
// then text fields; a batch item's missing options from the batch's
// defaults), checks it (400 naming the field), and refuses a job that
// needs libvips where it is absent (422 transform_unavailable), before
// anything is stored or charged.
func (in *jobRequest) resolveTransform(defaults connector.Transform) error {
	t, err := in.transformJSON.merged(in.transformText)
	if err != nil {
		return err
	}
	if t.Resize == nil {
		t.Resize = defaults.Resize
	}
	if t.Convert == nil {
		t.Convert = defaults.Convert
	}
	if t.Preserve == nil {
		t.Preserve = defaults.Preserve
	}
	if t.Target == nil {
		t.Target = defaults.Target
	}
	t = t.Clone()
	if err := t.Normalize(""); err != nil {
		return err
	}
	in.transform = t
	sniffed := ""
	if in.image != nil {
		sniffed = connector.SniffBytes(in.image)
	}
	if t.IsZero() && !imaging.IsHEIF(sniffed) {
		return nil
	}
	if len(t.Preserve) > 0 && imaging.OutputType(sniffed, t) == "image/avif" {
		// Known now for a conversion or an uploaded AVIF; an AVIF URL
		// fails in the worker, before the call, the same way.
		return fieldError("preserve", "metadata cannot be kept in an AVIF result; convert to webp, jpeg or png, or leave preserve out")
	}
	if err := imaging.CheckEnlargement(t); err != nil {
		return err
	}
	if err := imaging.Available(); err != nil {
		return imaging.Unavailable(err)
	}
	if in.image != nil {
		return checkKnownImage(in.image, t)
	}
	return nil
}

// checkKnownImage refuses, at creation, what the worker would refuse of an
// image already in hand before any work: a result over the pixel cap, and
// metadata to keep over its bounds. An image libvips cannot read is left
// to the worker, which fails it with its reason.
func checkKnownImage(b connector.Bytes, t connector.Transform) error {
	data := make([]byte, b.Size())
	if _, err := b.ReadAt(data, 0); err != nil && err != io.EOF {
		return err
	}
	in, err := imaging.Probe(data)
	if err != nil {
		return nil
	}
	out := imaging.Plan(in, t)
	if err := imaging.CheckOutput(out); err != nil {
		return err
	}
	if len(t.Preserve) > 0 {
		if _, err := imaging.PreservedMetadata(data, out.Type, t.Preserve); connector.ErrorCodeOf(err) == connector.EMETADATA {
			return err
		}
	}
	return nil
}

// transformDefaults checks a batch's own resize, convert and preserve, the
// defaults of its items (errors name the batch-level field).
func (in *batchRequest) transformDefaults() (connector.Transform, error) {
	d, err := in.Defaults.transformJSON.merged(in.Defaults.transformText)
	if err != nil {
		return d, err
	}
	check := d.Clone()
	return d, check.Normalize("")
}

// checkTransformed is the dry run's look at the image: inspect's checks for
// an image the compression API takes as it is; for one the job transforms,
// libvips reads the header (HEIC included, a bomb refused), and the output
// is planned as the worker will make it.
func checkTransformed(b connector.Bytes, t connector.Transform) (inspect.Info, *connector.ImageCheckOutput, error) {
	sniffed := connector.SniffBytes(b)
	if t.IsZero() && !imaging.IsHEIF(sniffed) {
		info, err := inspect.Image(b)
		return info, nil, err
	}
	if !imaging.IsHEIF(sniffed) {
		if _, err := inspect.Image(b); err != nil { // truncated, or over the pixel limit
			return inspect.Info{}, nil, err
		}
	}
	data := make([]byte, b.Size())
	if _, err := b.ReadAt(data, 0); err != nil && err != io.EOF {
		return inspect.Info{}, nil, err
	}
	in, err := imaging.Probe(data)
	if err != nil {
		return inspect.Info{}, nil, err
	}
	out := imaging.Plan(in, t)
	if err := imaging.CheckOutput(out); err != nil {
		return inspect.Info{}, nil, err
	}
	if len(t.Preserve) > 0 {
		if _, err := imaging.PreservedMetadata(data, out.Type, t.Preserve); err != nil {
			return inspect.Info{}, nil, err
		}
	}
	return inspect.Info{Type: in.Type, Size: b.Size(), Width: in.Width, Height: in.Height},
		&connector.ImageCheckOutput{Type: out.Type, Width: out.Width, Height: out.Height}, nil
}

// transformFieldNames are the transform's field names, sorted, for the
// lists of known fields that unknown-field errors suggest from.
func transformFieldNames() []string {
	names := make([]string, 0, len(transformTextFields))
	for name := range transformTextFields {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// setTransformJSON sets the transform from the JSON values of its fields
// (a batch's defaults, read field by field).
func (in *jobRequest) setTransformJSON(fields map[string]json.RawMessage) error {
	if len(fields) == 0 {
		return nil
	}
	obj, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return decodeJSON(bytes.NewReader(obj), &in.transformJSON)
}

// checkTarget is the dry run's answer for a target: whether a job would
// reach it (resized to the smallest when allowed, else at the lowest
// quality), and the size that decided; nil without a target.
func checkTarget(b connector.Bytes, t connector.Transform) (*connector.TargetCheck, error) {
	if t.Target == nil {
		return nil, nil
	}
	data := make([]byte, b.Size())
	if _, err := b.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, err
	}
	reach, err := imaging.Reachable(data, t)
	if err != nil {
		return nil, err
	}
	check := &connector.TargetCheck{MaxBytes: t.Target.MaxBytes, Reachable: reach.OK, SmallestBytes: reach.Smallest}
	if reach.Scored {
		score := math.Round(reach.Score*10) / 10
		check.Score = &score
	}
	return check, nil
}
