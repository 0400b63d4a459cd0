package imaging

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"sync"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// rotatedJPEG is a w×h JPEG stored with EXIF orientation 6: shown h×w.
func rotatedJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 7 / (y%13 + 1)), uint8(y * 3), uint8((x ^ y) & 0xff), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	seg := jpegOrientationSegment(6)
	return append(append(append([]byte{}, data[:2]...), seg...), data[2:]...)
}

func widths(ws ...int) []connector.Transform {
	out := make([]connector.Transform, len(ws))
	for i, w := range ws {
		out[i] = connector.Transform{Resize: &connector.Resize{Method: connector.ResizeScale, Width: w}}
	}
	return out
}

func TestVariantsOfARotatedPhotoAreOrientedAndSized(t *testing.T) {
	needVips(t)
	src := rotatedJPEG(t, 1500, 1000) // shown 1000×1500
	ts := widths(160, 400, 800)
	ts[0].Convert = &connector.Convert{Type: "image/webp"}
	got, err := Variants(context.Background(), src, ts, connector.MaxImageSize)
	if err != nil {
		t.Fatal(err)
	}
	want := []Info{{"image/webp", 160, 240}, {"image/jpeg", 400, 600}, {"image/jpeg", 800, 1200}}
	for i, res := range got {
		p, err := Probe(res.Data)
		if err != nil || p != want[i] || res.Output != want[i] {
			t.Errorf("variant %d: output %+v, file %+v (%v); want %+v", i, res.Output, p, err, want[i])
		}
	}
}

func TestVariantsRefuseABrokenSource(t *testing.T) {
	needVips(t)
	src := rotatedJPEG(t, 300, 200)
	if _, err := Variants(context.Background(), src[:len(src)/2], widths(100), connector.MaxImageSize); connector.ErrorCodeOf(err) != connector.EFORMAT {
		t.Fatalf("a truncated source: %v; want unsupported_format", err)
	}
}

var photo24MP = sync.OnceValue(func() []byte { return rotatedJPEG(benchTB{}, 6000, 4000) })

// BenchmarkSetOfFiveVsOneJob compares, on a 24 MP JPEG, one job's work
// before its call (the largest variant's transform) with a set of five
// variants (one decode, encodes side by side), and with five separate
// jobs; cpu-s/op is the process's CPU time (user + system) per op.
//
//	go test ./connector/imaging -run '^$' -bench 'SetOfFive/(one-job|set-of-5)' -benchtime 2x -count 6 | tee /tmp/set.txt; benchstat /tmp/set.txt
func BenchmarkSetOfFiveVsOneJob(b *testing.B) {
	needVips(b)
	src := photo24MP()
	five := widths(320, 640, 960, 1280, 1600)
	ctx := context.Background()
	b.Run("one-job-1600w", func(b *testing.B) {
		cpu0 := cpuSeconds()
		for b.Loop() {
			if _, err := ApplyContext(ctx, src, five[4], connector.MaxImageSize); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	})
	b.Run("set-of-5", func(b *testing.B) {
		cpu0 := cpuSeconds()
		for b.Loop() {
			if _, err := Variants(ctx, src, five, connector.MaxImageSize); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	})
	b.Run("five-jobs", func(b *testing.B) {
		for b.Loop() {
			for _, t := range five {
				if _, err := ApplyContext(ctx, src, t, connector.MaxImageSize); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// The set's encodes skip the Huffman pass: the same pixels as the
// optimized encoding, in more bytes.
func TestVariantsStandardHuffmanKeepsThePixels(t *testing.T) {
	needVips(t)
	src, err := vipsDecode(rotatedJPEG(t, 600, 400), shimParams{width: 300, height: maxCoord, downOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.free()
	p := pipeline(widths(300)[0], "image/jpeg", encodings("image/jpeg")[0])
	optimized, _, _, err := src.variant(p)
	if err != nil {
		t.Fatal(err)
	}
	p.standardHuffman = true
	standard, _, _, err := src.variant(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(standard) <= len(optimized) {
		t.Errorf("standard tables: %d bytes, optimized %d; want more", len(standard), len(optimized))
	}
	a, errA := jpeg.Decode(bytes.NewReader(optimized))
	b, errB := jpeg.Decode(bytes.NewReader(standard))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	ya, yb := a.(*image.YCbCr), b.(*image.YCbCr)
	if !bytes.Equal(ya.Y, yb.Y) || !bytes.Equal(ya.Cb, yb.Cb) || !bytes.Equal(ya.Cr, yb.Cr) {
		t.Error("the pixels differ")
	}
}
