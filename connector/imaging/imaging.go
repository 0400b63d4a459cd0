// Package imaging is imgflow's image library: it resizes, converts and
// orients an image, reads HEIC/HEIF, and carries chosen metadata over,
// before the one call of the compression API (connector.Transform). It owns
// libvips, the field's standard (imgproxy, sharp), loaded at run time with
// dlopen so that imgflow builds with only Go and gcc and runs, with
// transforms off, where libvips is absent (Available says why).
//
// Tests: go test ./connector/imaging (they skip without libvips;
// .ci/transforms.sh runs them where it must be present and fails on a skip).
package imaging

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/inspect"
)

// Available is nil when libvips is loaded and transforms can run, else why
// not.
func Available() error { return load() }

// Status is one line for a start-up banner: transforms on, with the
// libvips version, or off and why.
func Status() string {
	if err := load(); err != nil {
		return "transforms: off (libvips not found: " + err.Error() + "); install libvips42 for resize, convert, preserve and HEIC input"
	}
	return fmt.Sprintf("transforms: on (libvips %d.%d.%d): resize, convert, preserve, HEIC input", version(0), version(1), version(2))
}

// Info is an image's type and dimensions as shown (orientation applied).
type Info struct {
	Type   string `json:"type"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// Probe reads the image's header, decoding no pixel: its type and
// dimensions, orientation applied. An image libvips cannot read, or one
// over inspect.MaxPixels (a decompression bomb), is EFORMAT.
func Probe(data []byte) (Info, error) {
	if err := load(); err != nil {
		return Info{}, unavailable(err)
	}
	p, err := vipsProbe(data)
	if err != nil {
		return Info{}, unreadable(err.Error())
	}
	return checkedInfo(p, data)
}

func checkedInfo(p probeInfo, data []byte) (Info, error) {
	info := Info{Type: connector.SniffInputType(data), Width: p.width, Height: p.height}
	if info.Type == "" {
		return info, unreadable("not a PNG, JPEG, WebP, AVIF or HEIC image")
	}
	if p.orientation >= 5 && p.orientation <= 8 {
		info.Width, info.Height = info.Height, info.Width
	}
	if info.Width <= 0 || info.Height <= 0 {
		return info, unreadable(fmt.Sprintf("the image has no pixels (%d×%d)", info.Width, info.Height))
	}
	if int64(info.Width)*int64(info.Height) > inspect.MaxPixels {
		return info, unreadable(fmt.Sprintf("the image is %d×%d pixels, over the %d megapixels imgflow decodes",
			info.Width, info.Height, inspect.MaxPixels/1_000_000))
	}
	return info, nil
}

// IsHEIF reports whether a media type is HEIC/HEIF, which the compression
// API does not take: such an image is always transformed (to JPEG unless
// converted).
func IsHEIF(mimeType string) bool { return mimeType == "image/heic" || mimeType == "image/heif" }

// Needed reports whether an image of inputType needs the pixel step for t:
// a resize, a conversion to another type, or a HEIC input. Preserve alone
// does not (its metadata is added to the result after the call).
func Needed(inputType string, t connector.Transform) bool {
	return t.Resize != nil || (t.Convert != nil && t.Convert.Type != inputType) || IsHEIF(inputType)
}

// OutputType is the type of the result: the conversion's, JPEG for a HEIC
// input, else the input's.
func OutputType(inputType string, t connector.Transform) string {
	switch {
	case t.Convert != nil:
		return t.Convert.Type
	case IsHEIF(inputType):
		return "image/jpeg"
	}
	return inputType
}

// Plan is what Apply makes of an image described by in: the output's type
// and dimensions, computed as libvips' thumbnail computes them, without
// decoding (the dry run's answer).
func Plan(in Info, t connector.Transform) Info {
	out := Info{Type: OutputType(in.Type, t), Width: in.Width, Height: in.Height}
	r := t.Resize
	if r == nil {
		return out
	}
	bw, bh, _, _ := box(r)
	h := float64(in.Width) / float64(bw)
	v := float64(in.Height) / float64(bh)
	shrink := math.Max(h, v)
	if r.Method == connector.ResizeCover {
		shrink = math.Min(h, v)
	}
	if !r.Enlarge {
		shrink = math.Max(1, shrink)
	}
	out.Width = max(1, int(math.Floor(float64(in.Width)/shrink+0.5)))
	out.Height = max(1, int(math.Floor(float64(in.Height)/shrink+0.5)))
	if r.Method == connector.ResizeCover {
		out.Width, out.Height = min(out.Width, bw), min(out.Height, bh)
	}
	return out
}

// MaxOutputPixels is the most pixels a transform makes, as many as it
// reads (inspect.MaxPixels): the result goes to the compression API, which
// decodes no more, and memory follows pixels.
const MaxOutputPixels = inspect.MaxPixels

// CheckEnlargement refuses, before any image is read, an enlargement into
// a box over MaxOutputPixels (both sides given): it asks for more pixels
// than a transform makes.
func CheckEnlargement(t connector.Transform) error {
	r := t.Resize
	if r == nil || !r.Enlarge || r.Width == 0 || r.Height == 0 || int64(r.Width)*int64(r.Height) <= MaxOutputPixels {
		return nil
	}
	return overOutputCap(r.Width, r.Height)
}

// MaxAVIFPixels is the most pixels an AVIF result has: AV1's largest
// picture in one frame (MaxPicSize of levels 6.x, the AVIF advanced
// profile's; larger images are grids, which libvips does not make). It
// also bounds the encoder: libheif with aom holds about 14 bytes a pixel
// (a 49 MP AVIF took 705 MiB and 32 s; 35.6 MP about 510 MiB).
const MaxAVIFPixels = 35_651_584

// CheckOutput refuses a planned output over MaxOutputPixels, or an AVIF
// over MaxAVIFPixels.
func CheckOutput(out Info) error {
	px := int64(out.Width) * int64(out.Height)
	if px > MaxOutputPixels {
		return overOutputCap(out.Width, out.Height)
	}
	if out.Type == "image/avif" && px > MaxAVIFPixels {
		msg := fmt.Sprintf("an AVIF result would be %d×%d pixels, over the %.1f megapixels AV1 encodes in one image; ask for a smaller size or another type",
			out.Width, out.Height, float64(MaxAVIFPixels)/1e6)
		return &connector.Error{Code: connector.EINVALID, Message: "convert: " + msg,
			Details: []connector.FieldError{{Field: "convert", Message: msg}}}
	}
	return nil
}

// transformCost is a transform's share of the process's budget (gate.go):
// 4 bytes of every pixel read, and every pixel made at its encoder's
// bytes, as measured at 49 MP (libvips 8.14, libheif 1.15 with aom):
// AVIF 14.4 (16 here), WebP lossless 9.9 (10), JPEG and PNG stream (4).
// So two of the largest AVIFs or WebPs never encode at once in one
// process, while two 50 MP JPEGs or PNGs do.
func transformCost(in, out Info) int64 {
	made := int64(out.Width) * int64(out.Height)
	perMade := int64(4)
	switch out.Type {
	case "image/avif":
		perMade = 16
	case "image/webp":
		perMade = 10
	}
	return 4*int64(in.Width)*int64(in.Height) + perMade*made
}

func overOutputCap(w, h int) error {
	msg := fmt.Sprintf("the result would be %d×%d pixels, over the %d megapixels a transform makes; ask for a smaller size",
		w, h, MaxOutputPixels/1_000_000)
	return &connector.Error{Code: connector.EINVALID, Message: "resize: " + msg,
		Details: []connector.FieldError{{Field: "resize", Message: msg}}}
}

// box is the thumbnail's target box for r, and whether it crops.
func box(r *connector.Resize) (w, h int, crop, down bool) {
	w, h = r.Width, r.Height
	if w == 0 {
		w = maxCoord
	}
	if h == 0 {
		h = maxCoord
	}
	return w, h, r.Method == connector.ResizeCover, !r.Enlarge
}

// Result is a transformed image, ready for the compression API.
type Result struct {
	Data   []byte
	Input  Info
	Output Info
}

// Apply transforms data for t: orientation applied to the pixels, resized,
// flattened on the background when the target type has no alpha, and
// encoded near-losslessly in the output type, at most limit bytes, since
// the compression API encodes it once more. A decompression bomb is refused
// from its header, before decoding.
func Apply(data []byte, t connector.Transform, limit int64) (*Result, error) {
	return ApplyContext(context.Background(), data, t, limit)
}

// MaxTransformTime is the longest a transform computes: past it, or past
// ctx's deadline if sooner, libvips' computation is killed and the job
// fails with ETRANSFORMTIME (a run that would only fail again).
const MaxTransformTime = 60 * time.Second

// ApplyContext is Apply within ctx: it waits its turn for the process's
// transform budget (by estimated pixels × bands), and is killed at ctx's
// deadline or after MaxTransformTime.
func ApplyContext(ctx context.Context, data []byte, t connector.Transform, limit int64) (*Result, error) {
	in, err := Probe(data)
	if err != nil {
		return nil, err
	}
	if err := whole(data, in.Type); err != nil {
		return nil, err
	}
	res := &Result{Input: in, Output: Plan(in, t)}
	if err := CheckOutput(res.Output); err != nil {
		return nil, err
	}
	release, err := gate.acquire(ctx, transformCost(in, res.Output))
	if err != nil {
		return nil, outOfTime()
	}
	defer release()
	budget, err := timeBudget(ctx)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(budget)
	p := pipeline(t, res.Output.Type, encoding{})
	var last int
	for _, enc := range encodings(res.Output.Type) {
		p.format, p.quality, p.lossless = enc.format, enc.quality, enc.lossless
		if p.budget = time.Until(deadline); p.budget <= 0 {
			return nil, outOfTime()
		}
		out, w, h, err := vipsTransform(data, p)
		if err != nil {
			return nil, transformErr(err)
		}
		if int64(len(out)) <= limit {
			res.Data, res.Output.Width, res.Output.Height = out, w, h
			return res, nil
		}
		last = len(out)
	}
	return nil, &connector.Error{Code: connector.ETOOLARGE,
		Message: fmt.Sprintf("the transformed image is %d bytes, over the compression API's limit of %d bytes: resize it smaller", last, limit)}
}

// pipeline is the libvips run that makes t's image of type outType,
// written with enc: the resize box, and a flatten on t's background for a
// JPEG (which has no alpha). Every path starts from it (Apply, a set's
// variants, a fit search, the dry run).
func pipeline(t connector.Transform, outType string, enc encoding) shimParams {
	p := shimParams{width: maxCoord, height: maxCoord, downOnly: true,
		format: enc.format, quality: enc.quality, lossless: enc.lossless}
	if t.Resize != nil {
		p.width, p.height, p.attention, p.downOnly = box(t.Resize)
	}
	if outType == "image/jpeg" {
		p.flatten = true
		p.background = t.Convert.BackgroundRGB()
	}
	return p
}

// transformErr is a libvips failure as the job sees it: out of time when
// the run was killed, else an unreadable image.
func transformErr(err error) error {
	if errors.Is(err, errKilled) {
		return outOfTime()
	}
	return unreadable(err.Error())
}

// encoding is one way to write the intermediate image.
type encoding struct {
	format   int
	quality  int
	lossless bool
}

// encodings lists, best first, how to write the intermediate image of a
// type: lossless where the type allows it at a sane size, else a quality
// the compression API's own pass makes invisible; the next is tried when
// one is over the size limit.
func encodings(mimeType string) []encoding {
	switch mimeType {
	case "image/png":
		return []encoding{{format: fmtPNG, lossless: true}}
	case "image/webp":
		return []encoding{{format: fmtWebP, lossless: true}, {format: fmtWebP, quality: 95}, {format: fmtWebP, quality: 85}}
	case "image/avif":
		return []encoding{{format: fmtAVIF, quality: 90}, {format: fmtAVIF, quality: 75}}
	}
	return []encoding{{format: fmtJPEG, quality: 95}, {format: fmtJPEG, quality: 90}, {format: fmtJPEG, quality: 80}}
}

func outOfTime() error {
	return &connector.Error{Code: connector.ETRANSFORMTIME,
		Message: fmt.Sprintf("the transform did not finish in its time (at most %s): ask for a smaller size or another type", MaxTransformTime)}
}

func unreadable(why string) error {
	why = strings.TrimSpace(why)
	return &connector.Error{Code: connector.EFORMAT, Message: "the image could not be read: " + why,
		Details: []connector.FieldError{{Field: "image", Message: "must be a whole PNG, JPEG, WebP, AVIF or HEIC image"}}}
}

// Unavailable is the error a job gets that needs libvips where it is
// absent: 422 transform_unavailable, nothing charged.
func Unavailable(err error) error { return unavailable(err) }

func unavailable(err error) error {
	return &connector.Error{Code: connector.ETRANSFORMOFF,
		Message: "resize, convert, preserve and HEIC input need libvips, which this imgflow runs without (" + err.Error() + ")"}
}

// Orientation is the image's EXIF orientation (1 to 8; 1 when it has none
// or cannot be read). The compression API applies it to JPEG pixels only:
// any other type the job does not resize or convert goes through the pixel
// step when it is not 1, so that orientation is never lost.
func Orientation(data []byte) int {
	if load() != nil {
		return 1
	}
	p, err := vipsProbe(data)
	if err != nil || p.orientation < 1 || p.orientation > 8 {
		return 1
	}
	return p.orientation
}
