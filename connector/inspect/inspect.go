// Package inspect tells what an image is before it is compressed: its
// type, size and dimensions, and whether its file is whole. It reads the
// container (PNG chunks and their checksums, JPEG segments up to the end
// marker, the WebP RIFF size, AVIF boxes) but decodes no pixels, so a
// 10 MiB image costs a read of its bytes and no image-sized buffer. The
// dry run (POST /v1/jobs?dry_run=1) uses it to refuse, with the error a job
// would get, what the compression API would refuse: a truncated file, or a
// header claiming more pixels than it decodes.
package inspect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image/jpeg"
	"io"

	"golang.org/x/image/webp"

	"github.com/imgflow/imgflow/connector"
)

// MaxPixels is the most pixels the compression API decodes: the reference
// upstream answers a larger image 400 "Invalid file format"
// (fixtures/upstream/codec.MaxPixels, decided there; kept equal by a test).
const MaxPixels = 50_000_000

// Info is what the bytes tell.
type Info struct {
	Type   string `json:"type"` // media type, sniffed
	Size   int64  `json:"size"` // bytes
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// Image inspects b. Errors are EFORMAT (the code a job gets when the
// compression API refuses the bytes), saying what is wrong.
func Image(b connector.Bytes) (Info, error) {
	info := Info{Type: connector.SniffBytes(b), Size: b.Size()}
	r := io.NewSectionReader(b, 0, b.Size())
	var err error
	switch info.Type {
	case "image/png":
		info.Width, info.Height, err = pngInfo(r)
	case "image/jpeg":
		info.Width, info.Height, err = jpegInfo(r)
	case "image/webp":
		info.Width, info.Height, err = webpInfo(r)
	case "image/avif":
		info.Width, info.Height, err = avifInfo(r)
	default:
		return info, corrupt("the image is not a PNG, JPEG, WebP or AVIF file")
	}
	if err != nil {
		return info, err
	}
	if info.Width <= 0 || info.Height <= 0 {
		return info, corrupt("the image has no pixels (%d×%d)", info.Width, info.Height)
	}
	if int64(info.Width)*int64(info.Height) > MaxPixels {
		return info, corrupt("the image is %d×%d pixels, over the %d megapixels the compression API decodes",
			info.Width, info.Height, MaxPixels/1_000_000)
	}
	return info, nil
}

func corrupt(format string, args ...any) error {
	return &connector.Error{Code: connector.EFORMAT, Message: fmt.Sprintf(format, args...),
		Details: []connector.FieldError{{Field: "image", Message: "must be a whole PNG, JPEG, WebP or AVIF image"}}}
}

var errTruncated = corrupt("the image file is truncated or damaged: it ends before its data does")

// pngInfo walks the chunks to IEND, checking each checksum.
func pngInfo(r *io.SectionReader) (w, h int, err error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 8, r.Size()-8), 64<<10)
	var head [8]byte
	crc := crc32.NewIEEE()
	for first := true; ; first = false {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return 0, 0, errTruncated
		}
		n := int64(binary.BigEndian.Uint32(head[:4]))
		kind := string(head[4:8])
		if first {
			if kind != "IHDR" || n != 13 {
				return 0, 0, corrupt("the PNG file does not start with its header chunk")
			}
		}
		crc.Reset()
		crc.Write(head[4:8])
		var ihdr [13]byte
		body := io.Reader(io.LimitReader(br, n))
		if first {
			if _, err := io.ReadFull(br, ihdr[:]); err != nil {
				return 0, 0, errTruncated
			}
			crc.Write(ihdr[:])
			w, h = int(binary.BigEndian.Uint32(ihdr[0:4])), int(binary.BigEndian.Uint32(ihdr[4:8]))
			body = bytes.NewReader(nil)
		}
		if got, err := io.Copy(crc, body); err != nil || (!first && got != n) {
			return 0, 0, errTruncated
		}
		var sum [4]byte
		if _, err := io.ReadFull(br, sum[:]); err != nil {
			return 0, 0, errTruncated
		}
		if binary.BigEndian.Uint32(sum[:]) != crc.Sum32() {
			return 0, 0, corrupt("the PNG file is damaged: chunk %s fails its checksum", kind)
		}
		if kind == "IEND" {
			return w, h, nil
		}
	}
}

// jpegInfo reads the frame header, then walks the segments and the
// entropy-coded data to the end-of-image marker.
func jpegInfo(r *io.SectionReader) (w, h int, err error) {
	cfg, err := jpeg.DecodeConfig(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		return 0, 0, corrupt("the JPEG file is damaged: %v", err)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r, 2, r.Size()-2), 64<<10)
	for {
		// A marker: 0xFF (fill bytes allowed), then its code.
		c, err := br.ReadByte()
		if err != nil {
			return 0, 0, errTruncated
		}
		if c != 0xFF {
			continue // entropy-coded data between scans
		}
		for c == 0xFF {
			if c, err = br.ReadByte(); err != nil {
				return 0, 0, errTruncated
			}
		}
		switch {
		case c == 0xD9: // end of image
			return cfg.Width, cfg.Height, nil
		case c == 0x00, c >= 0xD0 && c <= 0xD7, c == 0x01:
			continue // a stuffed 0xFF byte, a restart marker, TEM: no length
		}
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, 0, errTruncated
		}
		n := int64(binary.BigEndian.Uint16(l[:])) - 2
		if n < 0 {
			return 0, 0, corrupt("the JPEG file is damaged: a segment of negative length")
		}
		if got, _ := io.CopyN(io.Discard, br, n); got != n {
			return 0, 0, errTruncated
		}
	}
}

// webpInfo checks the RIFF size against the file and reads the frame's.
func webpInfo(r *io.SectionReader) (w, h int, err error) {
	var head [12]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return 0, 0, errTruncated
	}
	if 8+int64(binary.LittleEndian.Uint32(head[4:8])) > r.Size() {
		return 0, 0, errTruncated
	}
	cfg, err := webp.DecodeConfig(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		return 0, 0, corrupt("the WebP file is damaged: %v", err)
	}
	return cfg.Width, cfg.Height, nil
}

// avifInfo checks that every box fits in the file and takes the largest
// image spatial extent (ispe) as the image's size.
func avifInfo(r *io.SectionReader) (w, h int, err error) {
	err = walkBoxes(r, 0, r.Size(), func(kind string, start, end int64) error {
		if kind == "meta" {
			return walkBoxes(r, start+4, end, func(kind string, start, end int64) error {
				if kind != "iprp" {
					return nil
				}
				return walkBoxes(r, start, end, func(kind string, start, end int64) error {
					if kind != "ipco" {
						return nil
					}
					return walkBoxes(r, start, end, func(kind string, start, end int64) error {
						var b [12]byte
						if kind != "ispe" || end-start < 12 {
							return nil
						}
						if _, err := r.ReadAt(b[:], start); err != nil {
							return errTruncated
						}
						bw, bh := int(binary.BigEndian.Uint32(b[4:8])), int(binary.BigEndian.Uint32(b[8:12]))
						if bw*bh > w*h {
							w, h = bw, bh
						}
						return nil
					})
				})
			})
		}
		return nil
	})
	return w, h, err
}

// walkBoxes calls fn with each ISO BMFF box between from and to: its type
// and where its body starts and ends. A box past to is a truncated file.
func walkBoxes(r *io.SectionReader, from, to int64, fn func(kind string, start, end int64) error) error {
	for at := from; at < to; {
		var b [16]byte
		if to-at < 8 {
			return errTruncated
		}
		if _, err := r.ReadAt(b[:8], at); err != nil {
			return errTruncated
		}
		size, head := int64(binary.BigEndian.Uint32(b[:4])), int64(8)
		switch size {
		case 0: // to the end
			size = to - at
		case 1: // 64-bit size follows
			if _, err := r.ReadAt(b[8:16], at+8); err != nil {
				return errTruncated
			}
			size, head = int64(binary.BigEndian.Uint64(b[8:16])), 16
		}
		if size < head || at+size > to {
			return errTruncated
		}
		if err := fn(string(b[4:8]), at+head, at+size); err != nil {
			return err
		}
		at += size
	}
	return nil
}
