// Package ssimulacra2 scores how close a distorted image is to its original
// with SSIMULACRA2 (Jon Sneyers, Cloudinary, 2022; the metric of libjxl's
// tools/ssimulacra2): 100 for identical images, about 90 for visually
// lossless, 70 for high-quality web images, 50 for medium quality, falling
// below zero for very poor ones. It tracks human ratings (CID22, TID2013,
// KADID-10k) better than PSNR, SSIM, DSSIM or Butteraugli.
//
// The computation, from the published description: both images go from
// sRGB to linear light and then to XYB (the opsin model of JPEG XL), moved
// to a 0..1 range; at six scales (1:1 to 1:32, each a 2×2 average of the
// last in linear light) a Gaussian blur (σ 1.5) gives each channel's local
// means, variances and covariance, from which come three error maps: SSIM
// without its luminance denominator, and the edge difference split into
// artifacts (edges the original has not) and detail lost (edges the
// distortion smoothed away). Each map's 1-norm and 4-norm per channel and
// scale, 108 numbers, are weighted, summed and mapped to the 0–100 scale.
//
// Pure Go, no dependency. Rows stream through a window of 11 rows per
// quantity, so memory is a third of one image in float32 (for the smaller
// scales) plus a few rows; strips of rows run on all CPUs.
//
// Tests: go test ./connector/imaging/ssimulacra2
package ssimulacra2

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Image is an 8-bit sRGB image: Bands 1 (grey), 2 (grey, alpha), 3 (RGB)
// or 4 (RGBA), rows packed (Pix is Width×Height×Bands bytes).
type Image struct {
	Width, Height, Bands int
	Pix                  []byte
}

// numScales is the metric's scales: 1:1 to 1:32.
const numScales = 6

// minSide is the shortest side a scale is computed at: smaller scales of
// a small image are left out, as the metric defines.
const minSide = 8

// alphaBackground is the grey (in sRGB) an image with alpha is composed
// on before it is scored, as the metric's reference does.
const alphaBackground = 0.5

// Score is SSIMULACRA2 of dist against orig (same dimensions).
func Score(orig, dist Image) (float64, error) {
	if err := check(orig); err != nil {
		return 0, fmt.Errorf("original: %w", err)
	}
	if err := check(dist); err != nil {
		return 0, fmt.Errorf("distorted: %w", err)
	}
	if orig.Width != dist.Width || orig.Height != dist.Height {
		return 0, fmt.Errorf("sizes differ: %d×%d and %d×%d", orig.Width, orig.Height, dist.Width, dist.Height)
	}
	if orig.Width < minSide || orig.Height < minSide {
		return 0, fmt.Errorf("the image is %d×%d: SSIMULACRA2 needs at least %d pixels on a side", orig.Width, orig.Height, minSide)
	}
	var total pyramid
	total.add(bytesRows(orig), bytesRows(dist), orig.Width, orig.Height)
	return combine(total.pooled()), nil
}

// pyramid is the error sums of every scale, with the pixels each scale
// summed over.
type pyramid struct {
	sums   [numScales]errorSums
	pixels [numScales]int
	scales int
}

// add sums the errors of b against a (w×h) at every scale.
func (p *pyramid) add(a, b rows, w, h int) {
	for scale := range numScales {
		if w < minSide || h < minSide {
			break
		}
		p.sums[scale].add(scaleSums(w, h, a, b))
		p.pixels[scale] += w * h
		p.scales = max(p.scales, scale+1)
		if scale == numScales-1 {
			break
		}
		a, b = downsample(a, w, h), downsample(b, w, h)
		w, h = (w+1)/2, (h+1)/2
	}
}

// pooled is every scale's 18 pooled errors: per channel the SSIM error's
// 1-norm and 4-norm, then the artifact's and the detail lost's.
func (p *pyramid) pooled() [][18]float64 {
	out := make([][18]float64, p.scales)
	for s := range out {
		perPixel := 1 / float64(p.pixels[s])
		t := &p.sums[s]
		for c := range 3 {
			out[s][c*2] = perPixel * t.ssim[c][0]
			out[s][c*2+1] = math.Sqrt(math.Sqrt(perPixel * t.ssim[c][1]))
			out[s][6+c*4] = perPixel * t.edge[c][0]
			out[s][6+c*4+1] = math.Sqrt(math.Sqrt(perPixel * t.edge[c][1]))
			out[s][6+c*4+2] = perPixel * t.edge[c][2]
			out[s][6+c*4+3] = math.Sqrt(math.Sqrt(perPixel * t.edge[c][3]))
		}
	}
	return out
}

func check(img Image) error {
	if img.Width <= 0 || img.Height <= 0 {
		return errors.New("no pixels")
	}
	if img.Bands < 1 || img.Bands > 4 {
		return fmt.Errorf("%d bands: want 1 to 4", img.Bands)
	}
	if len(img.Pix) != img.Width*img.Height*img.Bands {
		return fmt.Errorf("%d bytes of pixels for %d×%d×%d", len(img.Pix), img.Width, img.Height, img.Bands)
	}
	return nil
}

// rows gives an image's rows in linear RGB.
type rows interface {
	// row writes row y's linear R, G and B into r, g, b.
	row(y int, r, g, b []float32)
}

// toLinear maps an 8-bit sRGB value to linear light.
var toLinear = func() (lut [256]float32) {
	for i := range lut {
		c := float64(i) / 255
		if c <= 0.04045 {
			lut[i] = float32(c / 12.92)
		} else {
			lut[i] = float32(math.Pow((c+0.055)/1.055, 2.4))
		}
	}
	return lut
}()

// byteRows reads an Image's rows, composing alpha on alphaBackground in
// sRGB first.
type byteRows struct {
	img Image
}

func bytesRows(img Image) rows { return byteRows{img} }

func (s byteRows) row(y int, r, g, b []float32) {
	n := s.img.Bands
	line := s.img.Pix[y*s.img.Width*n : (y+1)*s.img.Width*n]
	for x := range r {
		p := line[x*n : x*n+n]
		switch n {
		case 1:
			v := toLinear[p[0]]
			r[x], g[x], b[x] = v, v, v
		case 3:
			r[x], g[x], b[x] = toLinear[p[0]], toLinear[p[1]], toLinear[p[2]]
		case 2:
			v := linearOver(p[0], p[1])
			r[x], g[x], b[x] = v, v, v
		case 4:
			r[x], g[x], b[x] = linearOver(p[0], p[3]), linearOver(p[1], p[3]), linearOver(p[2], p[3])
		}
	}
}

// linearOver is v with alpha a composed on alphaBackground, in linear light.
func linearOver(v, a byte) float32 {
	if a == 255 {
		return toLinear[v]
	}
	alpha := float64(a) / 255
	c := alpha*float64(v)/255 + (1-alpha)*alphaBackground
	if c <= 0.04045 {
		return float32(c / 12.92)
	}
	return float32(math.Pow((c+0.055)/1.055, 2.4))
}

// planes is an image in linear RGB, one float32 plane per channel.
type planes struct {
	width, height int
	c             [3][]float32
}

func (p *planes) row(y int, r, g, b []float32) {
	o := y * p.width
	copy(r, p.c[0][o:o+p.width])
	copy(g, p.c[1][o:o+p.width])
	copy(b, p.c[2][o:o+p.width])
}

// downsample averages 2×2 blocks in linear light (an odd last row or
// column repeats its edge).
func downsample(src rows, w, h int) *planes {
	ow, oh := (w+1)/2, (h+1)/2
	out := &planes{width: ow, height: oh}
	for c := range out.c {
		out.c[c] = make([]float32, ow*oh)
	}
	var in [2][3][]float32
	for i := range in {
		for c := range in[i] {
			in[i][c] = make([]float32, w)
		}
	}
	for oy := range oh {
		src.row(2*oy, in[0][0], in[0][1], in[0][2])
		src.row(min(2*oy+1, h-1), in[1][0], in[1][1], in[1][2])
		for c := range 3 {
			top, bottom, dst := in[0][c], in[1][c], out.c[c][oy*ow:(oy+1)*ow]
			for ox := range ow {
				x0, x1 := 2*ox, min(2*ox+1, w-1)
				dst[ox] = (top[x0] + top[x1] + bottom[x0] + bottom[x1]) * 0.25
			}
		}
	}
	return out
}

// The opsin absorbance of JPEG XL's XYB: linear RGB mixed into three cone
// responses (plus a bias), then a cube root.
var opsin = [3][3]float32{
	{0.30, 0.622, 0.078},
	{0.23, 0.692, 0.078},
	{0.24342268924547819, 0.20476744424496821, 1 - 0.24342268924547819 - 0.20476744424496821},
}

const opsinBias = 0.0037930732552754493

var cbrtBias = float32(math.Cbrt(opsinBias))

// toXYB turns linear rows r, g, b into the metric's positive XYB in place
// (X in r, Y in g, B in b): X×14 + 0.42, Y + 0.01, B − Y + 0.55, which puts
// every channel of sRGB within 0..1.
func toXYB(r, g, b []float32) {
	for i := range r {
		lr, lg, lb := r[i], g[i], b[i]
		m0 := cbrt(opsin[0][0]*lr+opsin[0][1]*lg+opsin[0][2]*lb+opsinBias) - cbrtBias
		m1 := cbrt(opsin[1][0]*lr+opsin[1][1]*lg+opsin[1][2]*lb+opsinBias) - cbrtBias
		m2 := cbrt(opsin[2][0]*lr+opsin[2][1]*lg+opsin[2][2]*lb+opsinBias) - cbrtBias
		x, y := 0.5*(m0-m1), 0.5*(m0+m1)
		r[i] = x*14 + 0.42
		g[i] = y + 0.01
		b[i] = (m2 - y) + 0.55
	}
}

// cbrt is the cube root of v (0 for v ≤ 0) to float32 precision: a guess
// from the exponent bits, then Newton steps.
func cbrt(v float32) float32 {
	if v <= 0 {
		return 0
	}
	y := math.Float32frombits(math.Float32bits(v)/3 + 709921077)
	y = (2*y + v/(y*y)) * (1.0 / 3)
	y = (2*y + v/(y*y)) * (1.0 / 3)
	y = (2*y + v/(y*y)) * (1.0 / 3)
	return y
}

// radius and kernel: the Gaussian of σ 1.5 the metric blurs with, cut at
// 5 pixels (3.3σ) and normalised; outside the image counts as zero.
const radius = 5

var kernel = func() (k [radius + 1]float32) {
	var w [radius + 1]float64
	sum := 0.0
	for i := range w {
		w[i] = math.Exp(-float64(i*i) / (2 * 1.5 * 1.5))
		sum += w[i]
		if i > 0 {
			sum += w[i]
		}
	}
	for i := range w {
		k[i] = float32(w[i] / sum)
	}
	return k
}()

// blurRow is in blurred along the row into out.
func blurRow(in, out []float32) {
	n := len(in)
	k0, k1, k2, k3, k4, k5 := kernel[0], kernel[1], kernel[2], kernel[3], kernel[4], kernel[5]
	for x := 0; x < n; x++ {
		if x >= radius && x+radius < n {
			s := in[x-radius : x+radius+1 : x+radius+1]
			out[x] = k0*s[5] + k1*(s[4]+s[6]) + k2*(s[3]+s[7]) + k3*(s[2]+s[8]) + k4*(s[1]+s[9]) + k5*(s[0]+s[10])
			continue
		}
		var sum float32
		for j := -radius; j <= radius; j++ {
			if i := x + j; i >= 0 && i < n {
				sum += kernel[abs(j)] * in[i]
			}
		}
		out[x] = sum
	}
}

// blurColumn blurs across rows: out is the kernel over col, the rows
// around out's (col[radius] its own), in one pass.
func blurColumn(col *[2*radius + 1][]float32, out []float32) {
	k0, k1, k2, k3, k4, k5 := kernel[0], kernel[1], kernel[2], kernel[3], kernel[4], kernel[5]
	r0, r1, r2, r3, r4, r5 := col[0][:len(out)], col[1][:len(out)], col[2][:len(out)], col[3][:len(out)], col[4][:len(out)], col[5][:len(out)]
	r6, r7, r8, r9, r10 := col[6][:len(out)], col[7][:len(out)], col[8][:len(out)], col[9][:len(out)], col[10][:len(out)]
	for x := range out {
		out[x] = k0*r5[x] + k1*(r4[x]+r6[x]) + k2*(r3[x]+r7[x]) + k3*(r2[x]+r8[x]) + k4*(r1[x]+r9[x]) + k5*(r0[x]+r10[x])
	}
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// The quantities blurred per channel: the two images, their squares and
// their product.
const (
	qA = iota
	qB
	qAA
	qBB
	qAB
	numQuantities
)

// errorSums is one strip's sums at one scale: per channel, the SSIM
// error's 1st and 4th powers, then the artifact's and the detail lost's.
type errorSums struct {
	ssim [3][2]float64
	edge [3][4]float64
}

func (s *errorSums) add(o *errorSums) {
	for c := range 3 {
		for i := range s.ssim[c] {
			s.ssim[c][i] += o.ssim[c][i]
		}
		for i := range s.edge[c] {
			s.edge[c][i] += o.edge[c][i]
		}
	}
}

// scaleSums is one scale's error sums of b against a (w×h), strips of
// rows in parallel.
func scaleSums(w, h int, a, b rows) *errorSums {
	strips := min(runtime.GOMAXPROCS(0), max(1, h/64))
	sums := make([]errorSums, strips)
	var wg sync.WaitGroup
	for i := range strips {
		y0, y1 := h*i/strips, h*(i+1)/strips
		wg.Add(1)
		go func() {
			defer wg.Done()
			stripErrors(w, h, y0, y1, a, b, &sums[i])
		}()
	}
	wg.Wait()
	for i := 1; i < len(sums); i++ {
		sums[0].add(&sums[i])
	}
	return &sums[0]
}

// window holds the last 2·radius+1 rows of every quantity, blurred along
// the row, and of both images in XYB.
type window struct {
	blurred [numQuantities][3][2*radius + 1][]float32
	xyb     [2][3][2*radius + 1][]float32
}

// stripErrors adds the errors of rows [y0, y1) into sums.
func stripErrors(w, h, y0, y1 int, a, b rows, sums *errorSums) {
	const span = 2*radius + 1
	var win window
	for q := range win.blurred {
		for c := range 3 {
			for i := range span {
				win.blurred[q][c][i] = make([]float32, w)
			}
		}
	}
	for img := range win.xyb {
		for c := range 3 {
			for i := range span {
				win.xyb[img][c][i] = make([]float32, w)
			}
		}
	}
	tmp := make([]float32, w)
	// load reads input row y into the window's slot for it.
	load := func(y int) {
		slot := y % span
		xa, xb := win.xyb[0], win.xyb[1]
		a.row(y, xa[0][slot], xa[1][slot], xa[2][slot])
		b.row(y, xb[0][slot], xb[1][slot], xb[2][slot])
		toXYB(xa[0][slot], xa[1][slot], xa[2][slot])
		toXYB(xb[0][slot], xb[1][slot], xb[2][slot])
		for c := range 3 {
			ra, rb := xa[c][slot], xb[c][slot]
			blurRow(ra, win.blurred[qA][c][slot])
			blurRow(rb, win.blurred[qB][c][slot])
			for x := range tmp {
				tmp[x] = ra[x] * ra[x]
			}
			blurRow(tmp, win.blurred[qAA][c][slot])
			for x := range tmp {
				tmp[x] = rb[x] * rb[x]
			}
			blurRow(tmp, win.blurred[qBB][c][slot])
			for x := range tmp {
				tmp[x] = ra[x] * rb[x]
			}
			blurRow(tmp, win.blurred[qAB][c][slot])
		}
	}
	var mu [numQuantities][]float32
	for q := range mu {
		mu[q] = make([]float32, w)
	}
	zero := make([]float32, w)
	first := max(0, y0-radius)
	next := first
	for y := y0; y < y1; y++ {
		for ; next <= min(h-1, y+radius); next++ {
			load(next)
		}
		for c := range 3 {
			// The column blur: rows outside the image count as zero.
			for q := range mu {
				var col [2*radius + 1][]float32
				for j := -radius; j <= radius; j++ {
					if yy := y + j; yy >= 0 && yy < h {
						col[j+radius] = win.blurred[q][c][yy%span]
					} else {
						col[j+radius] = zero
					}
				}
				blurColumn(&col, mu[q])
			}
			rowErrors(win.xyb[0][c][y%span], win.xyb[1][c][y%span], &mu, &sums.ssim[c], &sums.edge[c])
		}
	}
}

// c2 is SSIM's stabilising constant for the structure term.
const c2 = 0.0009

// rowErrors adds one row's errors of one channel: SSIM without the
// luminance denominator (which makes dark errors count more, wrong in a
// perceptual space), and the edge difference, split by its sign.
func rowErrors(ra, rb []float32, mu *[numQuantities][]float32, ssim *[2]float64, edge *[4]float64) {
	m1, m2, s11, s22, s12 := mu[qA], mu[qB], mu[qAA], mu[qBB], mu[qAB]
	var e0, e1, a0, a1, d0, d1 float64
	for x := range ra {
		mu1, mu2 := m1[x], m2[x]
		numM := 1 - (mu1-mu2)*(mu1-mu2)
		numS := 2*(s12[x]-mu1*mu2) + c2
		denS := (s11[x] - mu1*mu1) + (s22[x] - mu2*mu2) + c2
		d := 1 - float64(numM)*float64(numS)/float64(denS)
		if d > 0 {
			e0 += d
			e1 += quartic(d)
		}
		diff := (1+math.Abs(float64(rb[x]-mu2)))/(1+math.Abs(float64(ra[x]-mu1))) - 1
		if diff > 0 {
			a0 += diff
			a1 += quartic(diff)
		} else {
			d0 -= diff
			d1 += quartic(diff)
		}
	}
	ssim[0] += e0
	ssim[1] += e1
	edge[0] += a0
	edge[1] += a1
	edge[2] += d0
	edge[3] += d1
}

func quartic(x float64) float64 {
	x *= x
	return x * x
}
