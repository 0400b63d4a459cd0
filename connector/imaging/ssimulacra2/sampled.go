package ssimulacra2

import (
	"fmt"
	"math"
)

// TileSide is the side of the tiles ScoreSampled scores at full
// resolution; tileMargin the pixels around a tile read for the blur only,
// so that the tile's errors are the whole image's there (at least the
// blur's radius at the finest two scales).
const (
	TileSide   = 512
	tileMargin = 16
)

// ScoreSampled is Score over at most about maxPixels of work: the fine
// scales of an image larger than that are scored over evenly spread
// square tiles (TileSide) at full resolution, the coarse ones (from the
// first at most maxPixels) over the whole image, and the error sums pooled
// as Score pools them. Tiles rather than a downscaled pair: a compression
// artifact is a matter of single pixels, which downscaling averages away;
// the whole image at coarse scales: a tile's coarse scales would be mostly
// border.
func ScoreSampled(orig, dist Image, maxPixels int) (float64, error) {
	if err := check(orig); err != nil {
		return 0, fmt.Errorf("original: %w", err)
	}
	if err := check(dist); err != nil {
		return 0, fmt.Errorf("distorted: %w", err)
	}
	w, h := orig.Width, orig.Height
	const side = TileSide + 2*tileMargin
	if w*h <= maxPixels || w < side || h < side || dist.Width != w || dist.Height != h {
		return Score(orig, dist)
	}
	fine := 0 // the scales scored on tiles
	for cw, ch := w, h; cw*ch > maxPixels && fine < 2; fine++ {
		cw, ch = (cw+1)/2, (ch+1)/2
	}
	n := max(1, maxPixels/(TileSide*TileSide))
	// A grid of cols×nrows tiles in the image's proportions.
	cols := max(1, min(w/side, int(math.Round(math.Sqrt(float64(n)*float64(w)/float64(h))))))
	nrows := max(1, min(h/side, n/cols))
	var total pyramid
	for r := range nrows {
		for c := range cols {
			x := (w - side) * (2*c + 1) / (2 * cols) &^ 1 // even: 2×2 blocks as the whole image's
			y := (h - side) * (2*r + 1) / (2 * nrows) &^ 1
			total.add(bytesRows(tile(orig, x, y, side)), bytesRows(tile(dist, x, y, side)), side, side, 0, fine, tileMargin)
		}
	}
	var a, b rows = bytesRows(orig), bytesRows(dist)
	for range fine {
		a, b = downsample(a, w, h), downsample(b, w, h)
		w, h = (w+1)/2, (h+1)/2
	}
	total.add(a, b, w, h, fine, numScales, 0)
	return combine(total.pooled()), nil
}

// tile is img's square of side at x, y, copied.
func tile(img Image, x, y, side int) Image {
	n := img.Bands
	out := Image{Width: side, Height: side, Bands: n, Pix: make([]byte, 0, side*side*n)}
	for row := y; row < y+side; row++ {
		o := (row*img.Width + x) * n
		out.Pix = append(out.Pix, img.Pix[o:o+side*n]...)
	}
	return out
}
