package server

import (
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
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
var transformTextFields = map[string]bool{"resize": true, "resize_method": true, "resize_enlarge": true,
	"convert": true, "background": true, "preserve": true}

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
	t := connector.Transform{Resize: in.Resize, Convert: in.Convert, Preserve: in.Preserve}
	if err := t.ApplyText(in.transformText); err != nil {
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
	t = t.Clone()
	if err := t.Normalize(""); err != nil {
		return err
	}
	in.transform = t
	heic := in.image != nil && imaging.IsHEIF(connector.SniffBytes(in.image))
	if t.IsZero() && !heic {
		return nil
	}
	if err := imaging.Available(); err != nil {
		return imaging.Unavailable(err)
	}
	return nil
}

// transformDefaults checks a batch's own resize, convert and preserve, the
// defaults of its items (errors name the batch-level field).
func (in *batchRequest) transformDefaults() (connector.Transform, error) {
	d := connector.Transform{Resize: in.Defaults.Resize, Convert: in.Defaults.Convert, Preserve: in.Defaults.Preserve}
	if err := d.ApplyText(in.Defaults.transformText); err != nil {
		return d, err
	}
	check := d.Clone()
	return d, check.Normalize("")
}
