package imaging

import (
	"context"
	"fmt"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging/ssimulacra2"
)

// A target's min_score is a SSIMULACRA2 floor (package ssimulacra2): a
// candidate counts only when its score against the image it encodes (the
// transformed source at the candidate's dimensions) reaches the floor.

// pixelsOf is d as the score reads it.
func pixelsOf(d *decoded) (ssimulacra2.Image, error) {
	pix, w, h, bands, err := d.rgb()
	if err != nil {
		return ssimulacra2.Image{}, unreadable(err.Error())
	}
	return ssimulacra2.Image{Width: w, Height: h, Bands: bands, Pix: pix}, nil
}

// scoreEncoded is SSIMULACRA2 of an encoded file against ref, the pixels
// it was encoded from.
func scoreEncoded(ref ssimulacra2.Image, file []byte) (float64, error) {
	d, err := vipsDecode(file, shimParams{width: maxCoord, height: maxCoord, downOnly: true})
	if err != nil {
		return 0, unreadable(err.Error())
	}
	defer d.free()
	img, err := pixelsOf(d)
	if err != nil {
		return 0, err
	}
	// The whole image at full resolution: about a second of one core at
	// 12 MP. Tiles or a downscaled pair would be quicker but overstate the
	// score (artifacts are single pixels, and the 4-norms pool the worst).
	s, err := ssimulacra2.Score(ref, img)
	if err != nil {
		return 0, &connector.Error{Code: connector.EFORMAT, Message: "the result could not be scored: " + err.Error()}
	}
	return s, nil
}

// Score is SSIMULACRA2 of result (a file made from source for t, possibly
// made smaller by a target's search) against source transformed as t
// asks, resized to result's dimensions: what a min_score promises of the
// file delivered.
func Score(ctx context.Context, source []byte, t connector.Transform, result []byte) (float64, error) {
	out, err := Probe(result)
	if err != nil {
		return 0, err
	}
	in, err := Probe(source)
	if err != nil {
		return 0, err
	}
	release, err := gate.acquire(ctx, 4*int64(in.Width)*int64(in.Height)+12*int64(out.Width)*int64(out.Height))
	if err != nil {
		return 0, outOfTime()
	}
	defer release()
	ref, err := vipsDecode(source, pipeline(t, out.Type, encoding{}))
	if err != nil {
		return 0, unreadable(err.Error())
	}
	defer ref.free()
	if ref.width != out.Width || ref.height != out.Height {
		small, err := ref.resizedTo(out.Width, out.Height)
		if err != nil {
			return 0, unreadable(err.Error())
		}
		defer small.free()
		ref = small
	}
	pix, err := pixelsOf(ref)
	if err != nil {
		return 0, err
	}
	return scoreEncoded(pix, result)
}

// lowScore is the error of a target whose floor no candidate reached.
func lowScore(goal FitGoal, best float64) error {
	msg := fmt.Sprintf("no encoding of %d bytes or fewer reaches a SSIMULACRA2 score of %g: the best reached was %.1f", goal.MaxBytes, *goal.MinScore, best)
	if goal.AllowResize {
		msg += " (resizing included)"
	} else {
		msg += "; allow resizing (target.allow_resize), lower min_score or raise max_bytes"
	}
	return &connector.Error{Code: connector.ETARGETUNREACHABLE, Message: msg,
		Details: []connector.FieldError{{Field: "target.min_score", Message: fmt.Sprintf("best score reached: %.1f", best)}}}
}
