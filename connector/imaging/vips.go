package imaging

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "vips_shim.h"
*/
import "C"

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"
)

// libvips is loaded with dlopen on first use rather than linked: a build
// needs only gcc, and a machine without libvips (libvips42) runs imgflow
// with transforms off instead of failing to start.

var (
	loadOnce sync.Once
	loadErr  error
)

// LibraryEnv names the environment variable that overrides which libvips
// is loaded (a path, or a soname); "off" turns transforms off.
const LibraryEnv = "IMGFLOW_LIBVIPS"

// ThreadsEnv names the environment variable that sets how many threads
// libvips computes one image with (default 2): the process's transforms
// share the machine with the rest of the worker, and each thread holds
// buffers of its own.
const ThreadsEnv = "IMGFLOW_VIPS_THREADS"

func vipsThreads() int {
	if n, err := strconv.Atoi(os.Getenv(ThreadsEnv)); err == nil && n > 0 {
		return min(n, 64)
	}
	return 2
}

func load() error {
	loadOnce.Do(func() {
		lib := os.Getenv(LibraryEnv)
		if lib == "off" {
			loadErr = errors.New(LibraryEnv + "=off")
			return
		}
		if lib == "" {
			lib = "libvips.so.42"
		}
		name := C.CString(lib)
		defer C.free(unsafe.Pointer(name))
		if msg := C.shim_load(name); msg != nil {
			loadErr = errors.New(C.GoString(msg))
			return
		}
		if C.shim_version(0) != 8 || C.shim_version(1) < 10 {
			loadErr = errors.New("libvips 8.10 or later is needed")
			return
		}
		C.shim_concurrency(C.int(vipsThreads()))
	})
	return loadErr
}

// probeInfo is what the header says, before any pixel is decoded.
type probeInfo struct {
	loader        string
	width, height int
	orientation   int
	hasExif       bool
}

func version(part int) int { return int(C.shim_version(C.int(part))) }

func vipsProbe(data []byte) (probeInfo, error) {
	var info C.shim_info
	if err := cError(C.shim_probe(unsafe.Pointer(unsafe.SliceData(data)), C.size_t(len(data)), &info)); err != nil {
		return probeInfo{}, err
	}
	return probeInfo{loader: C.GoString(&info.loader[0]), width: int(info.width), height: int(info.height),
		orientation: int(info.orientation), hasExif: info.has_exif != 0}, nil
}

func vipsExif(data []byte) ([]byte, error) { return vipsBlob(data, "exif-data", "EXIF") }

func vipsXMP(data []byte) ([]byte, error) { return vipsBlob(data, "xmp-data", "XMP") }

// vipsBlob copies a metadata block of the image, refusing one over
// MaxMetadataBlob (blobTooLarge) without copying it.
func vipsBlob(data []byte, name, label string) ([]byte, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var out unsafe.Pointer
	var n C.size_t
	if err := cError(C.shim_blob(unsafe.Pointer(unsafe.SliceData(data)), C.size_t(len(data)), cname, MaxMetadataBlob, &out, &n)); err != nil {
		return nil, err
	}
	if out == nil && n > 0 {
		return nil, &blobTooLarge{name: label, size: int(n)}
	}
	if out == nil {
		return nil, nil
	}
	defer C.free(out)
	return C.GoBytes(out, C.int(n)), nil
}

// shimParams is one run of the pipeline: thumbnail (decode with
// shrink-on-load, orient, resize, crop), flatten, encode.
type shimParams struct {
	width, height int
	downOnly      bool
	attention     bool
	flatten       bool
	background    [3]float64
	format        int
	quality       int
	lossless      bool
	palette       bool // PNG: quantized to 2^bitdepth colours
	bitdepth      int
	dither        float64
	budget        time.Duration // the computation is killed after this long (0: never)
	// standardHuffman writes a JPEG with libjpeg's standard Huffman tables,
	// skipping the optimizing pass: the same pixels, about a quarter less
	// encoder time, a tenth more bytes.
	standardHuffman bool
}

// errKilled is a transform killed when its time ran out.
var errKilled = errors.New("the transform ran out of time")

const (
	fmtJPEG = C.SHIM_JPEG
	fmtPNG  = C.SHIM_PNG
	fmtWebP = C.SHIM_WEBP
	fmtAVIF = C.SHIM_AVIF
)

// maxCoord is libvips' VIPS_MAX_COORD: a side that does not bound.
const maxCoord = 10_000_000

// cParams is p as the shim takes it.
func cParams(p shimParams) C.shim_params {
	cp := C.shim_params{width: C.int(p.width), height: C.int(p.height), format: C.int(p.format), quality: C.int(p.quality),
		budget_ms: C.longlong(p.budget.Milliseconds()), bitdepth: C.int(p.bitdepth), dither: C.double(p.dither)}
	if p.downOnly {
		cp.size = 2 // VIPS_SIZE_DOWN
	}
	if p.attention {
		cp.crop = 3 // VIPS_INTERESTING_ATTENTION
	}
	if p.flatten {
		cp.flatten = 1
	}
	if p.lossless {
		cp.lossless = 1
	}
	if p.palette {
		cp.palette = 1
	}
	if p.standardHuffman {
		cp.standard_huffman = 1
	}
	for i, v := range p.background {
		cp.background[i] = C.double(v)
	}
	return cp
}

func vipsTransform(data []byte, p shimParams) (out []byte, width, height int, err error) {
	cp := cParams(p)
	var r C.shim_result
	if err := cError(C.shim_transform(unsafe.Pointer(unsafe.SliceData(data)), C.size_t(len(data)), &cp, &r)); err != nil {
		if r.killed != 0 {
			return nil, 0, 0, errKilled
		}
		return nil, 0, 0, err
	}
	defer C.shim_free(r.data)
	return C.GoBytes(r.data, C.int(r.len)), int(r.width), int(r.height), nil
}

func cError(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New(C.GoString(msg))
}
