package imaging

import (
	"context"
	"fmt"
	"math"

	"github.com/imgflow/imgflow/connector"
)

// A fit search (connector.Target) finds the encoding of the transformed
// image that uses a byte budget best: encoder quality first (JPEG, WebP,
// AVIF) or palette and colours (PNG), then dimensions when the target
// allows it. The compression API has no quality setting and charges per
// call, so every try happens here, before the one call.
//
// Tries are cheap on a proxy (the image at about one megapixel): the proxy
// predicts the knob, a full-size encode corrects the proxy's scale, and
// the bracket between full-size encodes closes by interpolation on log
// size. Pixels are decoded once.

// FitGoal is what a search aims at.
type FitGoal struct {
	// MaxBytes is what the delivered file may weigh; the search fails
	// target_unreachable when no candidate comes under it.
	MaxBytes int64
	// Aim is the candidate size aimed at (≥ MaxBytes): above MaxBytes when
	// the compression API is predicted to make the candidate smaller.
	Aim         int64
	AllowResize bool
	// MinScore, when set, is a SSIMULACRA2 floor (score.go): a candidate
	// under it does not count, and the search resizes (when allowed)
	// rather than go lower in quality.
	MinScore *float64
}

// Fit is how a fitted image was made.
type Fit struct {
	// Quality is the encoder's quality (1–100; for PNG, the palette
	// quantizer's), 0 when the image went losslessly.
	Quality int
	// Colours is a quantized PNG's palette size (0 otherwise).
	Colours       int
	Width, Height int
	// Encodes counts every encode of the search, FullEncodes those at the
	// transformed image's full dimensions; EncodedPixels sums the pixels
	// of every encode (the search's work).
	Encodes, FullEncodes int
	EncodedPixels        int64
	// Top: the best encoding there is (short of lossless for PNG, whose
	// palette the compression API makes anyway) is under the budget, so
	// the budget cannot be used more.
	Top bool
	// Score is the SSIMULACRA2 score of the candidate against the image it
	// encodes, when the goal had a MinScore (Scored); BestScore the best
	// any candidate under the budget reached, told when none reached the
	// floor.
	Score, BestScore float64
	Scored           bool

	topPixels int64
	smallest  int64
}

// knob is one setting of the encoder; a higher index gives a larger file.
type knob struct {
	quality  int
	bitdepth int // PNG palette
	lossless bool
}

// knobs lists a format's settings, smallest file first; floor is the
// lowest index the search uses before it resizes (when resizing is
// allowed): below it a smaller image looks better than a worse encoding.
func knobs(format int) (list []knob, floor int) {
	switch format {
	case fmtPNG:
		list = []knob{{quality: 0, bitdepth: 1}, {quality: 0, bitdepth: 2}, {quality: 30, bitdepth: 4}}
		for q := 10; q <= 100; q += 10 {
			list = append(list, knob{quality: q, bitdepth: 8})
		}
		return append(list, knob{lossless: true}), 5
	case fmtAVIF:
		// Steps of 3: an AVIF encode costs ten JPEG ones.
		for q := 1; q <= 100; q += 3 {
			if q > 80 {
				q -= 2 // single steps at the top, where a step weighs most
			}
			list = append(list, knob{quality: q})
		}
		return list, 8
	}
	for q := 1; q <= 95; q++ {
		list = append(list, knob{quality: q})
	}
	return list, 39
}

// proxyPixels is the size of the proxy the search tries knobs on.
const proxyPixels = 1_000_000

// closeEnough is the share of the aim a candidate may stop at.
const closeEnough = 0.93

// maxFullEncodes bounds the full-size encodes of one quality search.
const maxFullEncodes = 5

// minSide is the shortest side a resize goes down to.
const minSide = 8

type candidate struct {
	data   []byte
	k      int
	width  int
	height int
	score  float64
}

type searcher struct {
	ctx    context.Context
	goal   FitGoal
	format int
	list   []knob
	floor  int
	fit    Fit
	// smallest is the smallest size any candidate had.
	smallest int64
	// topPixels is the transformed image's size, before any resize.
	topPixels int64
	// lowScore: the last candidate under the budget scored under the
	// goal's MinScore.
	lowScore bool
}

// scoreOK scores c against ref, the image it encodes, when the goal has
// a MinScore, and reports whether it reaches it.
func (s *searcher) scoreOK(ref *decoded, c *candidate) (bool, error) {
	if s.goal.MinScore == nil {
		return true, nil
	}
	if err := s.ctx.Err(); err != nil {
		return false, outOfTime()
	}
	pix, err := pixelsOf(ref)
	if err != nil {
		return false, err
	}
	if c.score, err = scoreEncoded(pix, c.data); err != nil {
		return false, err
	}
	s.fit.BestScore = max(s.fit.BestScore, c.score)
	s.lowScore = c.score < *s.goal.MinScore
	return !s.lowScore, nil
}

func (s *searcher) params(k int) shimParams {
	kn := s.list[k]
	p := shimParams{format: s.format, quality: kn.quality, lossless: kn.lossless}
	if s.format == fmtPNG && !kn.lossless {
		p.palette, p.bitdepth, p.dither = true, kn.bitdepth, 1
	}
	if s.format == fmtWebP && kn.lossless {
		p.lossless = true
	}
	return p
}

// encode encodes img at knob k, counted.
func (s *searcher) encode(img *decoded, k int, full bool) ([]byte, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, outOfTime()
	}
	out, err := img.encode(s.params(k))
	if err != nil {
		return nil, unreadable(err.Error())
	}
	s.fit.Encodes++
	s.fit.EncodedPixels += img.pixels()
	if img.pixels() >= s.topPixels {
		s.fit.FullEncodes++
	}
	if full {
		if n := int64(len(out)); s.smallest == 0 || n < s.smallest {
			s.smallest = n
		}
	}
	return out, nil
}

// proxySizes caches the proxy's size per knob.
type proxySizes struct {
	img   *decoded
	sizes map[int]int64
}

func (s *searcher) proxySize(p *proxySizes, k int) (int64, error) {
	if n, ok := p.sizes[k]; ok {
		return n, nil
	}
	out, err := s.encode(p.img, k, false)
	if err != nil {
		return 0, err
	}
	p.sizes[k] = int64(len(out))
	return p.sizes[k], nil
}

// predict is the highest knob in [lo, hi] whose proxy size times scale
// is at most aim (lo when none), by bisection on the proxy.
func (s *searcher) predict(p *proxySizes, lo, hi int, scale float64, aim int64) (int, error) {
	best := lo
	for lo <= hi {
		mid := (lo + hi) / 2
		n, err := s.proxySize(p, mid)
		if err != nil {
			return 0, err
		}
		if float64(n)*scale <= float64(aim) {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

// searchKnob finds the highest knob from floor up whose full-size encode
// of img is at most aim. ok is false when even the floor is over; then
// the floor's candidate comes back (its size is the smallest reached).
func (s *searcher) searchKnob(img *decoded, proxy *proxySizes, floor int, aim int64) (best candidate, ok bool, err error) {
	type point struct {
		k    int
		size int64
		data []byte
	}
	var lo, hi *point
	sameSide := 0 // tries in a row that landed on the same side of the aim
	over := false
	full := func(k int) (*point, error) {
		out, err := s.encode(img, k, true)
		if err != nil {
			return nil, err
		}
		return &point{k: k, size: int64(len(out)), data: out}, nil
	}
	// The proxy's bytes scale to the full image's a little slower than
	// the pixels (the proxy has more detail per pixel); each full-size
	// encode corrects the scale.
	scale := math.Pow(float64(img.pixels())/float64(proxy.img.pixels()), 0.85)
	if proxy.img == img {
		scale = 1
	}
	top := len(s.list) - 1
	k, err := s.predict(proxy, floor, top, scale, aim)
	if err != nil {
		return candidate{}, false, err
	}
	for tries := 0; tries < maxFullEncodes; tries++ {
		pt, err := full(k)
		if err != nil {
			return candidate{}, false, err
		}
		if tries > 0 && (pt.size > aim) == over {
			sameSide++
		} else {
			sameSide = 0
		}
		over = pt.size > aim
		if pt.size <= aim {
			if lo == nil || pt.k > lo.k {
				lo = pt
			}
		} else if hi == nil || pt.k < hi.k {
			hi = pt
		}
		if lo != nil && float64(lo.size) >= closeEnough*float64(aim) {
			break
		}
		if lo != nil && (lo.k == top || (hi != nil && hi.k-lo.k <= 1)) {
			break
		}
		if hi != nil && hi.k == floor {
			break // even the floor is over
		}
		if proxy.img != img {
			if n, err := s.proxySize(proxy, pt.k); err == nil && n > 0 {
				scale = float64(pt.size) / float64(n)
			}
		}
		switch {
		case lo != nil && hi != nil:
			// Interpolation on log size between the bracket's ends.
			f := (math.Log(float64(aim)) - math.Log(float64(lo.size))) / (math.Log(float64(hi.size)) - math.Log(float64(lo.size)))
			k = lo.k + int(math.Round(f*float64(hi.k-lo.k)))
			if sameSide > 0 {
				// The curve bends (a step in the encoder's tables, say):
				// bisect once instead of creeping along one side.
				k = (lo.k + hi.k + 1) / 2
			}
			k = min(max(k, lo.k+1), hi.k-1)
		case lo != nil:
			k, err = s.predict(proxy, lo.k+1, top, scale, aim)
			if err != nil {
				return candidate{}, false, err
			}
			k = max(k, lo.k+1)
		default:
			k, err = s.predict(proxy, floor, hi.k-1, scale, aim)
			if err != nil {
				return candidate{}, false, err
			}
			k = min(k, hi.k-1)
		}
	}
	if lo == nil {
		if hi.k != floor { // out of tries above the floor: the floor decides
			pt, err := full(floor)
			if err != nil {
				return candidate{}, false, err
			}
			if pt.size <= aim {
				return candidate{data: pt.data, k: floor, width: img.width, height: img.height}, true, nil
			}
			hi = pt
		}
		return candidate{data: hi.data, k: hi.k, width: img.width, height: img.height}, false, nil
	}
	return candidate{data: lo.data, k: lo.k, width: img.width, height: img.height}, true, nil
}

// unreachable is the error of a target no candidate reaches.
func unreachable(goal FitGoal, smallest int64) error {
	how := "at the lowest quality"
	if goal.AllowResize {
		how = fmt.Sprintf("at the lowest quality and %d pixels on a side", minSide)
	}
	msg := fmt.Sprintf("the image cannot be made %d bytes or smaller: the smallest it came to was %d bytes (%s)", goal.MaxBytes, smallest, how)
	if !goal.AllowResize {
		msg += "; allow resizing (target.allow_resize) or raise max_bytes"
	}
	return &connector.Error{Code: connector.ETARGETUNREACHABLE, Message: msg,
		Details: []connector.FieldError{{Field: "target.max_bytes", Message: fmt.Sprintf("smallest reached: %d bytes", smallest)}}}
}

// fitDecoded searches the encoding of img (already transformed) for goal.
// img is not freed.
func fitDecoded(ctx context.Context, img *decoded, format int, goal FitGoal) ([]byte, Fit, error) {
	list, floor := knobs(format)
	s := &searcher{ctx: ctx, goal: goal, format: format, list: list, floor: floor, topPixels: img.pixels()}
	s.fit.BestScore = math.Inf(-1)
	if !goal.AllowResize {
		floor = 0
	}
	proxy := &proxySizes{img: img, sizes: map[int]int64{}}
	px := min(int64(proxyPixels), img.pixels()/4)
	if format == fmtAVIF {
		px /= 3
	}
	if img.pixels() > 100_000 {
		small, err := img.scaled(math.Sqrt(float64(px) / float64(img.pixels())))
		if err != nil {
			return nil, s.fit, unreadable(err.Error())
		}
		defer small.free()
		proxy.img = small
	}
	best, ok, err := s.searchKnob(img, proxy, floor, goal.Aim)
	if err != nil {
		return nil, s.fit, err
	}
	if !ok && int64(len(best.data)) <= goal.MaxBytes {
		ok = true // over the aim, under the limit: the best there is
	}
	if ok {
		if ok, err = s.scoreOK(img, &best); err != nil {
			return nil, s.fit, err
		}
	}
	// Then dimensions: the image scaled so that the floor's size meets the
	// aim, and quality searched again at that size.
	cur := img
	for tries := 0; !ok && goal.AllowResize && tries < 8; tries++ {
		side := min(cur.width, cur.height)
		if side <= minSide {
			break
		}
		// Bytes fall slower than pixels (a smaller image has more
		// detail per pixel): the exponent is a little over ½.
		f := math.Pow(float64(goal.Aim)/float64(len(best.data)), 0.6) * 0.97
		if s.lowScore {
			// The file fits but looks too poor: fewer pixels leave more
			// bytes for each.
			f = min(f, 0.75)
		}
		f = max(f, float64(minSide)/float64(side))
		f = min(f, 0.9)
		var next *decoded
		if next, err = cur.scaled(f); err != nil {
			return nil, s.fit, unreadable(err.Error())
		}
		if cur != img {
			cur.free()
		}
		cur = next
		if cur.pixels() <= proxy.img.pixels() {
			proxy = &proxySizes{img: cur, sizes: map[int]int64{}}
		}
		if best, ok, err = s.searchKnob(cur, proxy, floor, goal.Aim); err != nil {
			break
		}
		if !ok && int64(len(best.data)) <= goal.MaxBytes {
			ok = true
		}
		if ok {
			if ok, err = s.scoreOK(cur, &best); err != nil {
				break
			}
		}
	}
	if cur != img {
		defer cur.free()
	}
	if err != nil {
		return nil, s.fit, err
	}
	s.fit.smallest = s.smallest
	if !ok && s.lowScore {
		return nil, s.fit, lowScore(goal, s.fit.BestScore)
	}
	if !ok {
		return nil, s.fit, unreachable(goal, s.smallest)
	}
	s.fit.Score, s.fit.Scored = best.score, goal.MinScore != nil
	kn := list[best.k]
	s.fit.topPixels = s.topPixels
	s.fit.Top = best.k == len(list)-1 || (format == fmtPNG && best.k == len(list)-2)
	s.fit.Width, s.fit.Height = best.width, best.height
	if !kn.lossless {
		s.fit.Quality = kn.quality
		if format == fmtPNG {
			s.fit.Colours = 1 << kn.bitdepth
		}
	}
	return best.data, s.fit, nil
}

// FitContext is ApplyContext for a job with a target: the image
// transformed as t asks, then encoded to use goal's budget. An image
// already within goal.MaxBytes as t would make it goes as ApplyContext
// makes it (a generous target compresses as usual).
func FitContext(ctx context.Context, data []byte, t connector.Transform, goal FitGoal) (*Result, *Fit, error) {
	if goal.Aim < goal.MaxBytes {
		goal.Aim = goal.MaxBytes
	}
	in, err := Probe(data)
	if err != nil {
		return nil, nil, err
	}
	if err := whole(data, in.Type); err != nil {
		return nil, nil, err
	}
	res := &Result{Input: in, Output: Plan(in, t)}
	if err := CheckOutput(res.Output); err != nil {
		return nil, nil, err
	}
	if !Needed(in.Type, t) && int64(len(data)) <= goal.MaxBytes && Orientation(data) == 1 {
		res.Data = data
		fit := &Fit{Width: in.Width, Height: in.Height}
		if goal.MinScore != nil {
			fit.Score, fit.BestScore, fit.Scored = 100, 100, true // the source itself
		}
		return res, fit, nil
	}
	cost := 4 * (int64(in.Width)*int64(in.Height) + 2*int64(res.Output.Width)*int64(res.Output.Height))
	if goal.MinScore != nil {
		// A score holds both images' pixels, the candidate decoded, and
		// the metric's planes at half size: about 20 bytes a pixel.
		cost += 20 * int64(res.Output.Width) * int64(res.Output.Height)
	}
	release, err := gate.acquire(ctx, cost)
	if err != nil {
		return nil, nil, outOfTime()
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, MaxTransformTime)
	defer cancel()
	img, err := vipsDecode(data, pipeline(t, res.Output.Type, encoding{}))
	if err != nil {
		return nil, nil, unreadable(err.Error())
	}
	defer img.free()
	format := encodings(res.Output.Type)[0].format
	if Needed(in.Type, t) && float64(res.Output.Width)*float64(res.Output.Height)*0.3 <= float64(goal.MaxBytes) {
		// What the job makes without a target: when it is within the
		// budget, it goes as usual.
		for _, enc := range encodings(res.Output.Type)[:1] {
			out, err := img.encode(shimParams{format: enc.format, quality: enc.quality, lossless: enc.lossless})
			if err == nil && int64(len(out)) <= goal.MaxBytes {
				fit := &Fit{Width: img.width, Height: img.height, Encodes: 1, FullEncodes: 1}
				if goal.MinScore != nil {
					pix, err := pixelsOf(img)
					if err != nil {
						return nil, nil, err
					}
					if fit.Score, err = scoreEncoded(pix, out); err != nil {
						return nil, nil, err
					}
					fit.Scored, fit.BestScore = true, fit.Score
					if fit.Score < *goal.MinScore {
						break // the search decides (with a resize, when allowed)
					}
				}
				res.Data, res.Output.Width, res.Output.Height = out, img.width, img.height
				return res, fit, nil
			}
		}
	}
	out, fit, err := fitDecoded(ctx, img, format, goal)
	if err != nil {
		return nil, &fit, err
	}
	res.Data, res.Output.Width, res.Output.Height = out, fit.Width, fit.Height
	return res, &fit, nil
}

// Shrink brings a file of mimeType (the compression API's answer) to at
// most maxBytes, re-encoding it with the same search: the answer came back
// over the budget, and the delivered file never is.
func Shrink(ctx context.Context, data []byte, mimeType string, maxBytes int64, allowResize bool) ([]byte, *Fit, error) {
	if err := load(); err != nil {
		return nil, nil, unavailable(err)
	}
	p := shimParams{width: maxCoord, height: maxCoord, downOnly: true}
	img, err := vipsDecode(data, p)
	if err != nil {
		return nil, nil, unreadable(err.Error())
	}
	defer img.free()
	out, fit, err := fitDecoded(ctx, img, encodings(mimeType)[0].format, FitGoal{MaxBytes: maxBytes, Aim: maxBytes, AllowResize: allowResize})
	if err != nil {
		return nil, &fit, err
	}
	return out, &fit, nil
}

// Reach is the dry run's answer for a target.
type Reach struct {
	OK bool
	// Smallest is the size that decided: the image at the lowest quality
	// (and the shortest side when resizing is allowed); with a MinScore,
	// the file the search found, or the smallest it reached.
	Smallest int64
	// Score is the search's score when the target has a MinScore (Scored):
	// the file's, or the best reached when none reached the floor.
	Score  float64
	Scored bool
}

// Reachable tells, for the dry run, whether t's target can be met: with
// resizing allowed, whether the image at the shortest side and lowest
// quality fits; without, whether it fits at the lowest quality. A target
// with a MinScore is searched as a job would search it (a score cannot be
// bounded from one encode).
func Reachable(data []byte, t connector.Transform) (Reach, error) {
	if t.Target == nil {
		return Reach{OK: true}, nil
	}
	if t.Target.MinScore != nil {
		goal := FitGoal{MaxBytes: t.Target.MaxBytes, Aim: t.Target.MaxBytes, AllowResize: t.Target.Resizes(), MinScore: t.Target.MinScore}
		res, fit, err := FitContext(context.Background(), data, t, goal)
		switch {
		case err == nil:
			return Reach{OK: true, Smallest: int64(len(res.Data)), Score: fit.Score, Scored: true}, nil
		case connector.ErrorCodeOf(err) == connector.ETARGETUNREACHABLE && fit != nil:
			r := Reach{Smallest: fit.smallest, Score: fit.BestScore, Scored: !math.IsInf(fit.BestScore, -1)}
			return r, nil
		}
		return Reach{}, err
	}
	in, err := Probe(data)
	if err != nil {
		return Reach{}, err
	}
	out := Plan(in, t)
	if !Needed(in.Type, t) && int64(len(data)) <= t.Target.MaxBytes {
		return Reach{OK: true, Smallest: int64(len(data))}, nil
	}
	p := pipeline(t, out.Type, encoding{})
	if t.Target.Resizes() {
		side := min(out.Width, out.Height)
		f := math.Min(1, float64(minSide)/float64(side))
		p.width, p.height = max(1, int(float64(out.Width)*f)), max(1, int(float64(out.Height)*f))
		p.attention, p.downOnly = false, true
	}
	img, err := vipsDecode(data, p)
	if err != nil {
		return Reach{}, unreadable(err.Error())
	}
	defer img.free()
	format := encodings(out.Type)[0].format
	list, _ := knobs(format)
	s := &searcher{ctx: context.Background(), format: format, list: list}
	b, err := s.encode(img, 0, true)
	if err != nil {
		return Reach{}, err
	}
	return Reach{OK: int64(len(b)) <= t.Target.MaxBytes, Smallest: int64(len(b))}, nil
}

// Work is the search's encodes in full-size equivalents (pixels encoded
// over the transformed image's pixels).
func (f *Fit) Work() float64 {
	if f.Width == 0 || f.topPixels == 0 {
		return float64(f.Encodes)
	}
	return float64(f.EncodedPixels) / float64(f.topPixels)
}
