package imaging

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/fixtures/upstream/codec"
)

// TestMain lets bench.sh run this package's test binary as a one-shot
// command, so that its time and peak memory are measured per process as
// vipsthumbnail's and heif-convert's are (IMAGING_BENCH set: do that and
// exit; unset: run the tests).
//
//	IMAGING_BENCH="transform IN OUT RESIZE CONVERT"  Apply (RESIZE "1600x" or "-", CONVERT a type or "-")
//	IMAGING_BENCH="upstream IN OUT"                   the reference upstream's JPEG compression
//	IMAGING_BENCH="psnr A B"                          PSNR of B against A, in dB
//	IMAGING_BENCH="preserve IN TYPE"                  PreservedMetadata (copyright, creation, location) for a TYPE result
//	IMAGING_BENCH="bomb OUT jpeg|png"                 writes an EXIF bomb (metadatabomb_test.go) to OUT
func TestMain(m *testing.M) {
	cmd := os.Getenv("IMAGING_BENCH")
	if cmd == "" {
		os.Exit(m.Run())
	}
	if err := benchCommand(strings.Fields(cmd)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func benchCommand(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("IMAGING_BENCH: too few words")
	}
	if args[0] == "bomb" {
		img := images.PNGWithEXIF(images.Read(benchTB{}, "photo.png"), images.EXIFBomb(400, 512<<10))
		if args[2] == "jpeg" {
			img = images.JPEGWithEXIF(images.Read(benchTB{}, "photo.jpg"), images.EXIFBomb(4000, 16000))
		}
		return os.WriteFile(args[1], img, 0o644)
	}
	in, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	switch args[0] {
	case "transform":
		var t connector.Transform
		if len(args) > 3 && args[3] != "-" {
			if t.Resize, err = connector.ParseResizeText("resize", args[3], ""); err != nil {
				return err
			}
		}
		if len(args) > 4 && args[4] != "-" {
			t.Convert = &connector.Convert{Type: args[4]}
		}
		if err := t.Normalize(""); err != nil {
			return err
		}
		res, err := Apply(in, t, 1<<30)
		if err != nil {
			return err
		}
		return os.WriteFile(args[2], res.Data, 0o644)
	case "upstream":
		out, err := codec.Compress(codec.JPEG, in)
		if err != nil {
			return err
		}
		return os.WriteFile(args[2], out, 0o644)
	case "preserve":
		meta, err := PreservedMetadata(in, args[2], connector.PreserveGroups)
		fmt.Printf("%d bytes kept, %v\n", len(meta), err)
		return nil
	case "psnr":
		other, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		p, err := psnrOf(in, other)
		if err != nil {
			return err
		}
		fmt.Printf("%.2f\n", p)
		return nil
	}
	return fmt.Errorf("IMAGING_BENCH: unknown command %q", args[0])
}

func rgba(data []byte) (*image.RGBA, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Bounds(), img, img.Bounds().Min, draw.Src)
	return out, nil
}

// psnrOf is the PSNR of b against a over R, G and B.
func psnrOf(a, b []byte) (float64, error) {
	x, err := rgba(a)
	if err != nil {
		return 0, err
	}
	y, err := rgba(b)
	if err != nil {
		return 0, err
	}
	if x.Bounds().Size() != y.Bounds().Size() {
		return 0, fmt.Errorf("sizes differ: %v and %v", x.Bounds().Size(), y.Bounds().Size())
	}
	var sum float64
	n := 0
	for i := 0; i < len(x.Pix); i += 4 {
		for c := range 3 {
			d := float64(x.Pix[i+c]) - float64(y.Pix[i+c])
			sum += d * d
			n++
		}
	}
	if sum == 0 {
		return 99, nil
	}
	return 10 * math.Log10(255*255/(sum/float64(n))), nil
}

// benchTB is the testing.TB fixtures read with in the one-shot mode.
type benchTB struct{ testing.TB }

func (benchTB) Helper()                      {}
func (benchTB) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (benchTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
