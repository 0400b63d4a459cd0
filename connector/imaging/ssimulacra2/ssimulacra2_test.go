package ssimulacra2

import (
	"bytes"
	"image"
	"image/draw"
	"image/jpeg"
	"math"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images/synth"
)

func fromImage(img image.Image) Image {
	b := img.Bounds()
	rgba := image.NewRGBA(b)
	draw.Draw(rgba, b, img, b.Min, draw.Src)
	out := Image{Width: b.Dx(), Height: b.Dy(), Bands: 3, Pix: make([]byte, 0, b.Dx()*b.Dy()*3)}
	for i := 0; i < len(rgba.Pix); i += 4 {
		out.Pix = append(out.Pix, rgba.Pix[i], rgba.Pix[i+1], rgba.Pix[i+2])
	}
	return out
}

func jpegAt(t testing.TB, img image.Image, q int) Image {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	dec, err := jpeg.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return fromImage(dec)
}

// photo is the image the quality tests score: a real photograph when
// SSIMULACRA2_PHOTO names a JPEG or PNG, else the synthetic photo the
// fixtures are made of.
func photo(t testing.TB) image.Image {
	if path := os.Getenv("SSIMULACRA2_PHOTO"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img, _, err := image.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("photo: %s, %v", path, img.Bounds().Size())
		return img
	}
	return synth.Photo(7, 640, 480)
}

func TestIdenticalImagesScore100(t *testing.T) {
	a := fromImage(synth.Photo(3, 300, 200))
	got, err := Score(a, a)
	if err != nil || got != 100 {
		t.Fatalf("identical images: %v, %v; want 100", got, err)
	}
}

func TestScoreFallsAsJPEGQualityFalls(t *testing.T) {
	src := photo(t)
	orig := fromImage(src)
	prev := math.Inf(1)
	scores := map[int]float64{}
	for _, q := range []int{95, 90, 80, 70, 50, 30, 15, 5} {
		s, err := Score(orig, jpegAt(t, src, q))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("JPEG q%d: %.2f", q, s)
		if s >= prev {
			t.Errorf("q%d scores %.2f, not below the higher quality's %.2f", q, s, prev)
		}
		prev, scores[q] = s, s
	}
	// The published ranges for libjpeg-like encoders: about 80–90 at q90,
	// 40–60 at q30 (a little room either side for the image).
	if s := scores[90]; s < 75 || s > 92 {
		t.Errorf("q90 scores %.2f; want about 80–90", s)
	}
	if s := scores[30]; s < 35 || s > 65 {
		t.Errorf("q30 scores %.2f; want about 40–60", s)
	}
}

func TestScoreIsLowForUnrelatedImages(t *testing.T) {
	a := fromImage(synth.Photo(1, 256, 256))
	b := fromImage(synth.Screenshot(2, 256, 256))
	s, err := Score(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if s > 20 {
		t.Fatalf("a photo against a screenshot scores %.2f; want under 20", s)
	}
}

func TestScoreRefusesMismatchedOrTinyImages(t *testing.T) {
	a := fromImage(synth.Photo(1, 64, 64))
	if _, err := Score(a, fromImage(synth.Photo(1, 64, 63))); err == nil {
		t.Error("different sizes: want an error")
	}
	tiny := fromImage(synth.Photo(1, 7, 64))
	if _, err := Score(tiny, tiny); err == nil {
		t.Error("7 pixels wide: want an error")
	}
	if _, err := Score(Image{Width: 8, Height: 8, Bands: 3, Pix: make([]byte, 10)}, a); err == nil {
		t.Error("short pixel buffer: want an error")
	}
}

func TestAlphaIsComposedBeforeScoring(t *testing.T) {
	// Transparent pixels of any colour look the same on the background.
	w, h := 64, 64
	a := Image{Width: w, Height: h, Bands: 4, Pix: make([]byte, w*h*4)}
	b := Image{Width: w, Height: h, Bands: 4, Pix: make([]byte, w*h*4)}
	for i := 0; i < len(a.Pix); i += 4 {
		a.Pix[i] = 255
		b.Pix[i+2] = 255
	}
	if s, err := Score(a, b); err != nil || s != 100 {
		t.Fatalf("fully transparent images of different colours: %v, %v; want 100", s, err)
	}
}

func TestCubeRootIsFloat32Precise(t *testing.T) {
	for _, v := range []float32{1e-6, opsinBias, 0.01, 0.3, 0.5, 1, 1.2} {
		got, want := float64(cbrt(v)), math.Cbrt(float64(v))
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("cbrt(%g) = %g; want %g", v, got, want)
		}
	}
}

// BenchmarkScore12MP scores a 12 MP pair (a JPEG at quality 80 against
// its original), on one CPU and two; cpu-s is the process's CPU time per
// score (user + system), the cost on an idle machine however busy this
// one is:
//
//	go test ./connector/imaging/ssimulacra2 -run '^$' -bench Score12MP -cpu 1,2 -count 3
func BenchmarkScore12MP(b *testing.B) {
	src := synth.Photo(12, 4000, 3000)
	orig, dist := fromImage(src), jpegAt(b, src, 80)
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for b.Loop() {
		if _, err := Score(orig, dist); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
