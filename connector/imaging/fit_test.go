package imaging

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"slices"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images/synth"
	"github.com/imgflow/imgflow/fixtures/upstream/codec"
)

// fitCase is one image of the fill benchmark: its bytes, and the target.
type fitCase struct {
	name   string
	data   []byte
	t      connector.Transform
	target int64
	width  int
}

func encodeJPEG(tb testing.TB, img image.Image, q int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func encodePNG(tb testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// fitCases are n varied images (photos and screenshots, JPEG and PNG,
// some converted to WebP or AVIF), each with a target between a tenth and
// two thirds of its size.
func fitCases(tb testing.TB, n int) []fitCase {
	var out []fitCase
	for i := range n {
		seed := uint64(i + 1)
		w, h := 640+int(seed*137%1000), 480+int(seed*91%700)
		var img image.Image
		kind := "photo"
		if i%4 == 3 {
			img, kind = synth.Screenshot(seed, w, h), "screenshot"
		} else {
			img = synth.Photo(seed, w, h)
		}
		c := fitCase{name: kind, width: w}
		if i%3 == 1 {
			c.data, c.name = encodePNG(tb, img), c.name+".png"
		} else {
			c.data, c.name = encodeJPEG(tb, img, 92), c.name+".jpg"
		}
		switch i % 5 {
		case 2:
			c.t.Convert, c.name = &connector.Convert{Type: "image/webp"}, c.name+">webp"
		case 4:
			if i%10 == 9 && kind == "photo" { // a screenshot to AVIF can outlast the transform's time under load
				c.t.Convert, c.name = &connector.Convert{Type: "image/avif"}, c.name+">avif"
			}
		}
		share := []float64{0.1, 0.2, 0.35, 0.5, 0.66}[i%5]
		c.target = int64(float64(len(c.data)) * share)
		c.t.Target = &connector.Target{MaxBytes: c.target}
		out = append(out, c)
	}
	return out
}

// deliver runs a job's target path with the reference upstream's codec
// standing in for the call: the search aimed by ratios, the call, the
// ratios learnt, a local shrink when the answer is over.
func deliver(tb testing.TB, ratios *Ratios, c fitCase) (delivered []byte, fit *Fit, sent int) {
	ctx := context.Background()
	outType := OutputType(connector.SniffInputType(c.data), c.t)
	goal := FitGoal{MaxBytes: c.target, Aim: ratios.Aim(outType, c.target), AllowResize: c.t.Target.Resizes()}
	res, fit, err := FitContext(ctx, c.data, c.t, goal)
	if err != nil {
		tb.Fatalf("%s: %v", c.name, err)
	}
	answer, err := codec.Compress(codec.Format(outType[len("image/"):]), res.Data)
	if err != nil {
		tb.Fatalf("%s: upstream: %v", c.name, err)
	}
	ratios.Learn(outType, int64(len(res.Data)), int64(len(answer)))
	if int64(len(answer)) > c.target {
		if answer, _, err = Shrink(ctx, answer, outType, c.target, goal.AllowResize); err != nil {
			tb.Fatalf("%s: shrink: %v", c.name, err)
		}
	}
	return answer, fit, len(res.Data)
}

func TestFitFillsTheBudget(t *testing.T) {
	needVips(t)
	n := 30
	if testing.Short() {
		n = 10
	}
	var ratios Ratios
	var fills []float64
	for _, c := range fitCases(t, n) {
		out, fit, sent := deliver(t, &ratios, c)
		fill := float64(len(out)) / float64(c.target)
		t.Logf("%-22s %8d → target %7d: %7d (%.1f %%) q=%d colours=%d %dx%d encodes=%d full=%d work=%.1f", c.name, len(c.data), c.target,
			len(out), 100*fill, fit.Quality, fit.Colours, fit.Width, fit.Height, fit.Encodes, fit.FullEncodes, fit.Work())
		if int64(len(out)) > c.target {
			t.Errorf("%s: %d bytes delivered, over the target of %d", c.name, len(out), c.target)
		}
		if fit.Top && fit.Width == c.width {
			t.Logf("%s: best encoding under the target (a generous target): not counted", c.name)
			continue
		}
		if float64(sent) >= 0.9*float64(c.target) && float64(len(out)) < 0.9*float64(sent) {
			// The upstream re-encodes at its own quality: what it makes of
			// any candidate at the budget is smaller, and it is called once.
			t.Logf("%s: sent %d, the upstream's own encoding is %d: not counted", c.name, sent, len(out))
			continue
		}
		if c.t.Convert == nil {
			// The upstream's encoding of the source itself is the most any
			// candidate of it can come back as: a target above that is
			// generous, whatever is sent.
			own, err := codec.Compress(codec.Format(connector.SniffInputType(c.data)[len("image/"):]), c.data)
			if err == nil && float64(len(own)) < 0.75*float64(c.target) {
				t.Logf("%s: the upstream makes %d of the source itself: not counted", c.name, len(own))
				continue
			}
		}
		if fill < 0.75 {
			t.Errorf("%s: %d bytes delivered, %.1f %% of the target of %d (want ≥ 75 %%)", c.name, len(out), 100*fill, c.target)
		}
		fills = append(fills, fill)
	}
	slices.Sort(fills)
	median := fills[len(fills)/2]
	t.Logf("fill over %d images: median %.1f %%, min %.1f %%", len(fills), 100*median, 100*fills[0])
	if median < 0.9 {
		t.Errorf("median fill %.1f %%, want ≥ 90 %%", 100*median)
	}
}

func TestFitUnreachableWithoutResize(t *testing.T) {
	needVips(t)
	data := encodeJPEG(t, synth.Photo(3, 800, 600), 90)
	no := false
	tr := connector.Transform{Target: &connector.Target{MaxBytes: 500, AllowResize: &no}}
	_, _, err := FitContext(context.Background(), data, tr, FitGoal{MaxBytes: 500, Aim: 500})
	e := connector.AsError(err)
	if e.Code != connector.ETARGETUNREACHABLE || len(e.Details) == 0 {
		t.Fatalf("got %v, want target_unreachable with the smallest size in details", err)
	}
	t.Log(e.Message, e.Details)
	reach, err := Reachable(data, tr)
	ok, smallest := reach.OK, reach.Smallest
	if err != nil || ok || smallest <= 500 {
		t.Fatalf("Reachable = %v, %d, %v; want false with the size over 500", ok, smallest, err)
	}
	yes := true
	tr.Target.AllowResize = &yes
	if reach, err := Reachable(data, tr); err != nil || !reach.OK {
		t.Fatalf("Reachable with resize = %v, %v; want true", ok, err)
	}
	res, _, err := FitContext(context.Background(), data, tr, FitGoal{MaxBytes: 500, Aim: 500, AllowResize: true})
	if err != nil || len(res.Data) > 500 {
		t.Fatalf("with resize: %v, %d bytes", err, len(res.Data))
	}
}

func TestFitGenerousTargetGoesAsUsual(t *testing.T) {
	needVips(t)
	data := encodeJPEG(t, synth.Photo(4, 400, 300), 85)
	tr := connector.Transform{Target: &connector.Target{MaxBytes: int64(len(data)) * 2}}
	res, _, err := FitContext(context.Background(), data, tr, FitGoal{MaxBytes: tr.Target.MaxBytes, Aim: tr.Target.MaxBytes})
	if err != nil || !bytes.Equal(res.Data, data) {
		t.Fatalf("a target above the image's size: %v; want the input as it came", err)
	}
}
