package imaging

/*
#include <stdlib.h>
#include "vips_shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// decoded is an image's pixels in libvips' memory, oriented, resized and
// flattened as the job asks: what a fit search encodes many times without
// decoding again. free releases it.
type decoded struct {
	h             unsafe.Pointer
	width, height int
}

func vipsDecode(data []byte, p shimParams) (*decoded, error) {
	cp := cParams(p)
	var h unsafe.Pointer
	var w, ht C.int
	err := cError(C.shim_decode(unsafe.Pointer(unsafe.SliceData(data)), C.size_t(len(data)), &cp, &h, &w, &ht))
	runtime.KeepAlive(data)
	if err != nil {
		return nil, err
	}
	return &decoded{h: h, width: int(w), height: int(ht)}, nil
}

// scaled is d resized by scale (Lanczos), a new image of its own.
func (d *decoded) scaled(scale float64) (*decoded, error) {
	var h unsafe.Pointer
	var w, ht C.int
	if err := cError(C.shim_scale(d.h, C.double(scale), &h, &w, &ht)); err != nil {
		return nil, err
	}
	return &decoded{h: h, width: int(w), height: int(ht)}, nil
}

func (d *decoded) encode(p shimParams) ([]byte, error) {
	cp := cParams(p)
	var r C.shim_result
	if err := cError(C.shim_encode(d.h, &cp, &r)); err != nil {
		return nil, err
	}
	defer C.shim_free(r.data)
	return C.GoBytes(r.data, C.int(r.len)), nil
}

func (d *decoded) free() {
	if d != nil && d.h != nil {
		C.shim_unref(d.h)
		d.h = nil
	}
}

func (d *decoded) pixels() int64 { return int64(d.width) * int64(d.height) }

// variant is one image of a set made from d (shared, read-only): resized,
// cropped, flattened and encoded as p asks, killed after p.budget.
func (d *decoded) variant(p shimParams) (out []byte, width, height int, err error) {
	cp := cParams(p)
	var r C.shim_result
	if err := cError(C.shim_variant(d.h, &cp, &r)); err != nil {
		if r.killed != 0 {
			return nil, 0, 0, errKilled
		}
		return nil, 0, 0, err
	}
	defer C.shim_free(r.data)
	return C.GoBytes(r.data, C.int(r.len)), int(r.width), int(r.height), nil
}

// rgb is d's pixels as 8-bit sRGB, rows packed: bands is 3, or 4 with
// alpha.
func (d *decoded) rgb() (pix []byte, width, height, bands int, err error) {
	var out unsafe.Pointer
	var n C.size_t
	var w, h, b C.int
	if err := cError(C.shim_pixels(d.h, &out, &n, &w, &h, &b)); err != nil {
		return nil, 0, 0, 0, err
	}
	defer C.shim_free(out)
	return C.GoBytes(out, C.int(n)), int(w), int(h), int(b), nil
}

// resizedTo is d resized to exactly width×height (aspect not kept), a new
// image of its own.
func (d *decoded) resizedTo(width, height int) (*decoded, error) {
	var h unsafe.Pointer
	var w, ht C.int
	if err := cError(C.shim_resize_to(d.h, C.int(width), C.int(height), &h, &w, &ht)); err != nil {
		return nil, err
	}
	return &decoded{h: h, width: int(w), height: int(ht)}, nil
}
