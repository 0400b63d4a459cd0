package imaging

/*
#include <stdlib.h>
#include "vips_shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"math"
	"time"
	"unsafe"

	"github.com/imgflow/imgflow/connector"
)

// Variants makes the images of a responsive set (connector.Variant) from
// one source with one decode: the source is decoded once, with
// shrink-on-load to the size its largest variant needs, oriented, and held
// in memory; every variant is resized (and cropped, flattened) from those
// pixels and encoded as Apply encodes it. Results are by index of ts. A
// variant whose first encoding is over limit is made again by Apply alone.
func Variants(ctx context.Context, data []byte, ts []connector.Transform, limit int64) ([]*Result, error) {
	in, err := Probe(data)
	if err != nil {
		return nil, err
	}
	if err := whole(data, in.Type); err != nil {
		return nil, err
	}
	out := make([]*Result, len(ts))
	params := make([]C.shim_params, len(ts))
	shared := math.Inf(1) // the least shrink of any variant: the decode's
	cost := 4 * int64(in.Width) * int64(in.Height)
	for i, t := range ts {
		res := &Result{Input: in, Output: Plan(in, t)}
		if err := CheckOutput(res.Output); err != nil {
			return nil, err
		}
		out[i] = res
		cost += 4 * int64(res.Output.Width) * int64(res.Output.Height)
		shared = math.Min(shared, shrinkOf(in, t))
		p := shimParams{width: maxCoord, height: maxCoord, downOnly: true}
		if t.Resize != nil {
			p.width, p.height, p.attention, p.downOnly = box(t.Resize)
		}
		if res.Output.Type == "image/jpeg" {
			p.flatten = true
			p.background = t.Convert.BackgroundRGB()
		}
		enc := encodings(res.Output.Type)[0]
		p.format, p.quality, p.lossless = enc.format, enc.quality, enc.lossless
		params[i] = cParams(p)
	}
	shared = math.Max(1, shared)
	width := int(math.Ceil(float64(in.Width) / shared))
	height := int(math.Ceil(float64(in.Height) / shared))
	release, err := gate.acquire(ctx, cost)
	if err != nil {
		return nil, outOfTime()
	}
	defer release()
	budget := MaxTransformTime
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline))
	}
	if budget <= 0 {
		return nil, outOfTime()
	}
	for i := range params {
		params[i].budget_ms = C.longlong(budget.Milliseconds())
	}
	rs := make([]C.shim_result, len(ts))
	msg := C.shim_variants(unsafe.Pointer(unsafe.SliceData(data)), C.size_t(len(data)), C.int(width), C.int(height),
		unsafe.SliceData(params), C.int(len(params)), unsafe.SliceData(rs))
	if err := cError(msg); err != nil {
		for _, r := range rs {
			if r.killed != 0 {
				return nil, outOfTime()
			}
		}
		if errors.Is(err, errKilled) {
			return nil, outOfTime()
		}
		return nil, unreadable(err.Error())
	}
	for i, r := range rs {
		encoded := C.GoBytes(r.data, C.int(r.len))
		C.shim_free(r.data)
		out[i].Output.Width, out[i].Output.Height = int(r.width), int(r.height)
		out[i].Data = encoded
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
