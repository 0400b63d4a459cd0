package imaging

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images/synth"
)

// BenchmarkFit12MP is target searches on a 12 MP JPEG photo, over budgets
// from 100 KB (resized) to 1.2 MB (quality only): the time of one search,
// its work in full-size encodes (fullenc: pixels encoded over the image's,
// proxy and resized encodes included) at p95, and the least share of the
// budget a candidate used. cpu-s is the process's CPU time per search
// (user + system): with one libvips thread, the time on one idle core
// however busy the machine is.
//
//	IMGFLOW_VIPS_THREADS=1 go test ./connector/imaging -run '^$' -bench Fit12MP -benchtime 2x
func BenchmarkFit12MP(b *testing.B) {
	if err := Available(); err != nil {
		b.Skip(err)
	}
	data := encodeJPEG(b, synth.Photo(12, 4000, 3000), 90)
	b.Logf("input: %d bytes, 4000×3000", len(data))
	targets := []int64{100_000, 200_000, 350_000, 500_000, 700_000, 900_000, 1_000_000, 1_200_000}
	var work, full, fill, secs, cpu []float64
	b.ResetTimer()
	for range b.N {
		for _, target := range targets {
			tr := connector.Transform{Target: &connector.Target{MaxBytes: target}}
			start, cpu0 := time.Now(), cpuSeconds()
			res, fit, err := FitContext(context.Background(), data, tr, FitGoal{MaxBytes: target, Aim: target, AllowResize: true})
			if err != nil {
				b.Fatal(err)
			}
			secs = append(secs, time.Since(start).Seconds())
			cpu = append(cpu, cpuSeconds()-cpu0)
			work = append(work, fit.Work())
			full = append(full, float64(fit.FullEncodes))
			fill = append(fill, float64(len(res.Data))/float64(target))
			if b.N == 1 {
				b.Logf("target %7d: %7d bytes, q=%d %d×%d, %.1f full-size equivalents (%d encodes, %d at full size), %.2f CPU s", target, len(res.Data),
					fit.Quality, fit.Width, fit.Height, fit.Work(), fit.Encodes, fit.FullEncodes, cpu[len(cpu)-1])
			}
		}
	}
	slices.Sort(work)
	slices.Sort(full)
	slices.Sort(fill)
	slices.Sort(secs)
	slices.Sort(cpu)
	b.ReportMetric(cpu[(len(cpu)-1)*95/100], "cpu-s-p95")
	b.ReportMetric(work[(len(work)-1)*95/100], "fullenc-p95")
	b.ReportMetric(full[(len(full)-1)*95/100], "fullsize-p95")
	b.ReportMetric(secs[(len(secs)-1)*95/100], "s-p95")
	b.ReportMetric(100*fill[0], "fill-min-%")
	b.ReportMetric(100*fill[len(fill)/2], "fill-median-%")
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
