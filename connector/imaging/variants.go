package imaging

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Variants makes the images of a responsive set (connector.Variant) from
// one source with one decode: the source is decoded once, with
// shrink-on-load to the size its largest variant needs, oriented, and held
// in memory; every variant is resized (and cropped, flattened) from those
// pixels and encoded as Apply encodes it, the variants side by side on
// the process's CPUs (the encoders are single-threaded, the pixels shared
// read-only). Results are by index of ts. A variant whose first encoding
// is over limit is made again by Apply alone.
func Variants(ctx context.Context, data []byte, ts []connector.Transform, limit int64) ([]*Result, error) {
	in, err := Probe(data)
	if err != nil {
		return nil, err
	}
	if err := whole(data, in.Type); err != nil {
		return nil, err
	}
	out := make([]*Result, len(ts))
	params := make([]shimParams, len(ts))
	shared := math.Inf(1) // the least shrink of any variant: the decode's
	for i, t := range ts {
		res := &Result{Input: in, Output: Plan(in, t)}
		if err := CheckOutput(res.Output); err != nil {
			return nil, err
		}
		out[i] = res
		shared = math.Min(shared, shrinkOf(in, t))
		params[i] = pipeline(t, res.Output.Type, encodings(res.Output.Type)[0])
		// The set's encodes stand between its decode and every variant's
		// call (one job's encode overlaps its decode): the Huffman pass
		// is skipped, pixels unchanged, for a tenth more bytes to the
		// compression API, which encodes them again.
		params[i].standardHuffman = true
	}
	shared = math.Max(1, shared)
	decode := shimParams{width: int(math.Ceil(float64(in.Width) / shared)), height: int(math.Ceil(float64(in.Height) / shared)), downOnly: true}
	// The source read, its decoded copy, and every variant's encoder at
	// once (they run side by side).
	cost := 4*int64(in.Width)*int64(in.Height) + 4*int64(decode.width)*int64(decode.height)
	for _, res := range out {
		cost += transformCost(Info{}, res.Output)
	}
	release, err := gate.acquire(ctx, cost)
	if err != nil {
		return nil, outOfTime()
	}
	defer release()
	budget, err := timeBudget(ctx)
	if err != nil {
		return nil, err
	}
	src, err := vipsDecode(data, decode)
	if err != nil {
		return nil, unreadable(err.Error())
	}
	defer src.free()
	errs := make([]error, len(ts))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(ts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= len(ts) {
					return
				}
				params[k].budget = budget
				var w, h int
				out[k].Data, w, h, errs[k] = src.variant(params[k])
				out[k].Output.Width, out[k].Output.Height = w, h
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, transformErr(err)
		}
	}
	for i, res := range out {
		if int64(len(res.Data)) > limit {
			if out[i], err = ApplyContext(ctx, data, ts[i], limit); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// timeBudget is how long a transform may compute within ctx: at most
// MaxTransformTime.
func timeBudget(ctx context.Context) (time.Duration, error) {
	budget := MaxTransformTime
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline))
	}
	if budget <= 0 {
		return 0, outOfTime()
	}
	return budget, nil
}

// shrinkOf is how much t shrinks an image described by in (as Plan
// computes it, before a crop): below 1 for an enlargement, 1 for none.
func shrinkOf(in Info, t connector.Transform) float64 {
	r := t.Resize
	if r == nil {
		return 1
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
	return shrink
}
