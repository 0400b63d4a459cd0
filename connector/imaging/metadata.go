package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"html"
	"regexp"
	"slices"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// Metadata is kept by group (connector.Transform.Preserve): the compression
// API drops all of it, so the groups asked for are read from the original
// here, as a new, minimal EXIF block holding only their tags, and written
// into the compressed file afterwards (WithMetadata) without re-encoding
// it. Nothing else of the original's metadata (camera, thumbnail, maker
// notes, GPS unless asked) comes through.

// EXIF tags of each group.
var (
	copyrightTags = []uint16{0x8298, 0x013B}                                                 // Copyright, Artist (IFD0)
	creationTags  = []uint16{0x9003, 0x9004, 0x9010, 0x9011, 0x9012, 0x9290, 0x9291, 0x9292} // DateTimeOriginal, CreateDate, offsets, subseconds (Exif IFD)
)

const (
	tagExifIFD = 0x8769
	tagGPSIFD  = 0x8825
)

// PreservedMetadata is the EXIF block (TIFF structure) that keeps groups of
// data's metadata, nil when the original has none of them. A result type
// the block cannot be written into (AVIF) is refused before any call.
func PreservedMetadata(data []byte, outputType string, groups []string) ([]byte, error) {
	if outputType == "image/avif" {
		return nil, &connector.Error{Code: connector.EINVALID, Message: "preserve: metadata cannot be kept in an AVIF result; convert to webp, jpeg or png, or leave preserve out",
			Details: []connector.FieldError{{Field: "preserve", Message: "not available for image/avif results"}}}
	}
	if err := load(); err != nil {
		return nil, unavailable(err)
	}
	raw, err := vipsExif(data)
	if err != nil {
		return nil, metadataError(err)
	}
	raw = bytes.TrimPrefix(raw, []byte("Exif\x00\x00"))
	b := &metadataBudget{}
	src, err := parseTIFF(raw, b)
	if errors.Is(err, errOverBudget) {
		return nil, tooMuchMetadata(b.why)
	}
	if err != nil { // no EXIF, or unreadable: keeps nothing of it
		src = &tiff{order: binary.LittleEndian}
	}
	var ifd0, exif, gps []tiffEntry
	if slices.Contains(groups, connector.PreserveCopyright) {
		ifd0 = src.pick(src.ifd0, copyrightTags)
		xmp, err := vipsXMP(data)
		if errors.Is(err, errOverBudget) {
			return nil, metadataError(err)
		}
		if err == nil && len(xmp) > 0 {
			ifd0 = withXMPCopyright(ifd0, xmp)
		}
	}
	if slices.Contains(groups, connector.PreserveCreation) {
		exif = src.pick(src.exif, creationTags)
	}
	if slices.Contains(groups, connector.PreserveLocation) {
		gps = src.gps
	}
	if len(ifd0)+len(exif)+len(gps) == 0 {
		return nil, nil
	}
	kept := writeTIFF(src.order, ifd0, exif, gps)
	if len(kept) > MaxKeptMetadata {
		return nil, tooMuchMetadata(fmt.Sprintf("the metadata kept is %d bytes, over the %d bytes a result carries (one JPEG APP1 segment)",
			len(kept), MaxKeptMetadata))
	}
	return kept, nil
}

type tiffEntry struct {
	tag, typ uint16
	count    uint32
	value    []byte // count × the type's size, in the block's byte order
}

// byteOrder is the EXIF block's byte order, kept from the original so
// that values are copied as they are.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

type tiff struct {
	order           byteOrder
	ifd0, exif, gps []tiffEntry
}

func (t *tiff) pick(entries []tiffEntry, tags []uint16) []tiffEntry {
	var out []tiffEntry
	for _, e := range entries {
		if slices.Contains(tags, e.tag) {
			out = append(out, e)
		}
	}
	return out
}

var typeSizes = map[uint16]uint32{1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8}

var errTIFF = errors.New("malformed EXIF")

func parseTIFF(b []byte, budget *metadataBudget) (*tiff, error) {
	if len(b) < 8 {
		return nil, errTIFF
	}
	t := &tiff{}
	switch string(b[:2]) {
	case "II":
		t.order = binary.LittleEndian
	case "MM":
		t.order = binary.BigEndian
	default:
		return nil, errTIFF
	}
	var err error
	if t.ifd0, err = readIFD(b, t.order, t.order.Uint32(b[4:8]), budget); err != nil {
		return nil, err
	}
	for _, e := range t.ifd0 {
		if (e.tag == tagExifIFD || e.tag == tagGPSIFD) && len(e.value) == 4 {
			sub, err := readIFD(b, t.order, t.order.Uint32(e.value), budget)
			if errors.Is(err, errOverBudget) {
				return nil, err
			}
			if err != nil {
				continue
			}
			if e.tag == tagExifIFD {
				t.exif = sub
			} else {
				t.gps = sub
			}
		}
	}
	return t, nil
}

// readIFD reads one IFD's entries, their values aliasing b (nothing is
// copied until the kept block is written). Every entry and every byte of
// value it references count against budget, each time they are referenced:
// entries may share their value, and IFDs may share their entries.
func readIFD(b []byte, order byteOrder, off uint32, budget *metadataBudget) ([]tiffEntry, error) {
	if uint64(off)+2 > uint64(len(b)) {
		return nil, errTIFF
	}
	n := uint32(order.Uint16(b[off:]))
	if uint64(off)+2+12*uint64(n) > uint64(len(b)) {
		return nil, errTIFF
	}
	if err := budget.entries(int(n)); err != nil {
		return nil, err
	}
	var out []tiffEntry
	for i := range n {
		p := b[off+2+12*i:]
		e := tiffEntry{tag: order.Uint16(p), typ: order.Uint16(p[2:]), count: order.Uint32(p[4:])}
		size, ok := typeSizes[e.typ]
		if !ok || e.count > 1<<16 {
			continue
		}
		total := size * e.count
		if total <= 4 {
			e.value = p[8 : 8+total : 8+total]
		} else {
			at := order.Uint32(p[8:])
			if uint64(at)+uint64(total) > uint64(len(b)) {
				continue
			}
			if err := budget.bytes(int64(total)); err != nil {
				return nil, err
			}
			e.value = b[at : at+total : at+total]
		}
		out = append(out, e)
	}
	return out, nil
}

// writeTIFF lays out IFD0 (with pointers to the Exif and GPS IFDs when
// they have entries), then the Exif IFD, then the GPS IFD, each followed
// by its values longer than four bytes.
func writeTIFF(order byteOrder, ifd0, exif, gps []tiffEntry) []byte {
	ptr := func(tag uint16) tiffEntry { return tiffEntry{tag: tag, typ: 4, count: 1, value: make([]byte, 4)} }
	if len(exif) > 0 {
		ifd0 = append(ifd0, ptr(tagExifIFD))
	}
	if len(gps) > 0 {
		ifd0 = append(ifd0, ptr(tagGPSIFD))
	}
	for _, ifd := range [][]tiffEntry{ifd0, exif, gps} {
		slices.SortFunc(ifd, func(a, b tiffEntry) int { return int(a.tag) - int(b.tag) })
	}
	size := func(ifd []tiffEntry) uint32 {
		if len(ifd) == 0 {
			return 0 // not written
		}
		n := uint32(2 + 12*len(ifd) + 4)
		for _, e := range ifd {
			if len(e.value) > 4 {
				n += uint32(len(e.value)+1) &^ 1
			}
		}
		return n
	}
	exifAt := 8 + size(ifd0)
	gpsAt := exifAt + size(exif)
	for i := range ifd0 {
		switch ifd0[i].tag {
		case tagExifIFD:
			order.PutUint32(ifd0[i].value, exifAt)
		case tagGPSIFD:
			order.PutUint32(ifd0[i].value, gpsAt)
		}
	}
	out := make([]byte, 8, gpsAt+size(gps))
	if order.String() == binary.LittleEndian.String() {
		copy(out, "II*\x00")
	} else {
		copy(out, "MM\x00*")
	}
	order.PutUint32(out[4:], 8)
	for _, ifd := range [][]tiffEntry{ifd0, exif, gps} {
		if len(ifd) == 0 {
			continue
		}
		start := uint32(len(out))
		data := start + uint32(2+12*len(ifd)+4)
		out = order.AppendUint16(out, uint16(len(ifd)))
		var tail []byte
		for _, e := range ifd {
			out = order.AppendUint16(out, e.tag)
			out = order.AppendUint16(out, e.typ)
			out = order.AppendUint32(out, e.count)
			if len(e.value) <= 4 {
				v := make([]byte, 4)
				copy(v, e.value)
				out = append(out, v...)
				continue
			}
			out = order.AppendUint32(out, data+uint32(len(tail)))
			tail = append(tail, e.value...)
			if len(tail)%2 == 1 {
				tail = append(tail, 0)
			}
		}
		out = order.AppendUint32(out, 0) // no next IFD
		out = append(out, tail...)
	}
	return out
}

// WithMetadata writes the EXIF block exif into an image of type mimeType
// without re-encoding it: a JPEG APP1 segment, a PNG eXIf chunk, or a WebP
// EXIF chunk (with the extended header that announces it).
func WithMetadata(img []byte, mimeType string, exif []byte) ([]byte, error) {
	switch mimeType {
	case "image/jpeg":
		if len(img) < 2 || img[0] != 0xFF || img[1] != 0xD8 {
			return nil, errors.New("not a JPEG")
		}
		seg := append([]byte("Exif\x00\x00"), exif...)
		if len(seg)+2 > 0xFFFF {
			return nil, errors.New("EXIF block too large for one JPEG segment")
		}
		out := make([]byte, 0, len(img)+len(seg)+4)
		out = append(out, 0xFF, 0xD8, 0xFF, 0xE1, byte((len(seg)+2)>>8), byte(len(seg)+2))
		out = append(out, seg...)
		return append(out, img[2:]...), nil
	case "image/png":
		const ihdrEnd = 8 + 8 + 13 + 4
		if len(img) < ihdrEnd || string(img[12:16]) != "IHDR" {
			return nil, errors.New("not a PNG")
		}
		chunk := binary.BigEndian.AppendUint32(nil, uint32(len(exif)))
		chunk = append(chunk, "eXIf"...)
		chunk = append(chunk, exif...)
		chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
		out := append(slices.Clone(img[:ihdrEnd]), chunk...)
		return append(out, img[ihdrEnd:]...), nil
	case "image/webp":
		return webpWithExif(img, exif)
	}
	return nil, fmt.Errorf("metadata cannot be written into %s", mimeType)
}

// webpWithExif adds an EXIF chunk at the end of a WebP file, turning a
// simple file (VP8/VP8L) into an extended one (VP8X) first.
func webpWithExif(img, exif []byte) ([]byte, error) {
	if len(img) < 30 || string(img[:4]) != "RIFF" || string(img[8:12]) != "WEBP" {
		return nil, errors.New("not a WebP")
	}
	body, err := webpChunksWithout(img[12:], "EXIF", "XMP ")
	if err != nil {
		return nil, err
	}
	switch string(body[:4]) {
	case "VP8X":
		body[8] = body[8]&^0x04 | 0x08 // EXIF present, XMP gone
	case "VP8 ", "VP8L":
		w, h, alpha, err := webpSize(body)
		if err != nil {
			return nil, err
		}
		x := []byte("VP8X")
		x = binary.LittleEndian.AppendUint32(x, 10)
		flags := byte(0x08)
		if alpha {
			flags |= 0x10
		}
		x = append(x, flags, 0, 0, 0)
		x = append(x, byte(w-1), byte((w-1)>>8), byte((w-1)>>16), byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
		body = append(x, body...)
	default:
		return nil, errors.New("unknown WebP layout")
	}
	body = append(body, "EXIF"...)
	body = binary.LittleEndian.AppendUint32(body, uint32(len(exif)))
	body = append(body, exif...)
	if len(exif)%2 == 1 {
		body = append(body, 0)
	}
	out := []byte("RIFF")
	out = binary.LittleEndian.AppendUint32(out, uint32(4+len(body)))
	out = append(out, "WEBP"...)
	return append(out, body...), nil
}

// webpSize reads the canvas of a simple WebP's first chunk.
func webpSize(chunk []byte) (w, h int, alpha bool, err error) {
	d := chunk[8:]
	switch string(chunk[:4]) {
	case "VP8 ":
		if len(d) < 10 {
			return 0, 0, false, errors.New("short VP8 chunk")
		}
		return int(binary.LittleEndian.Uint16(d[6:]) & 0x3FFF), int(binary.LittleEndian.Uint16(d[8:]) & 0x3FFF), false, nil
	default: // VP8L
		if len(d) < 5 || d[0] != 0x2F {
			return 0, 0, false, errors.New("short VP8L chunk")
		}
		bits := binary.LittleEndian.Uint32(d[1:])
		return int(bits&0x3FFF) + 1, int((bits>>14)&0x3FFF) + 1, bits>>28&1 == 1, nil
	}
}

// webpChunksWithout copies a WebP's chunks, leaving out those named.
func webpChunksWithout(body []byte, names ...string) ([]byte, error) {
	var out []byte
	for len(body) > 0 {
		if len(body) < 8 {
			return nil, errors.New("truncated WebP chunk")
		}
		n := uint64(binary.LittleEndian.Uint32(body[4:8]))
		end := 8 + n + n%2
		if end > uint64(len(body)) {
			end = uint64(len(body))
			if 8+n > end {
				return nil, errors.New("truncated WebP chunk")
			}
		}
		if !slices.Contains(names, string(body[:4])) {
			out = append(out, body[:end]...)
		}
		body = body[end:]
	}
	if len(out) < 8 {
		return nil, errors.New("WebP without image data")
	}
	return out, nil
}

// XMP's copyright (dc:rights) and author (dc:creator), for images whose
// copyright lives in XMP only (Lightroom, phone apps): each becomes its
// EXIF tag when the EXIF block lacks it, so the kept metadata says it in
// the one block the result carries.
var (
	xmpRights  = regexp.MustCompile(`(?s)<dc:rights>.*?<rdf:li[^>]*>([^<]+)</rdf:li>`)
	xmpCreator = regexp.MustCompile(`(?s)<dc:creator>.*?<rdf:li[^>]*>([^<]+)</rdf:li>`)
)

func withXMPCopyright(ifd0 []tiffEntry, xmp []byte) []tiffEntry {
	has := func(tag uint16) bool {
		return slices.ContainsFunc(ifd0, func(e tiffEntry) bool { return e.tag == tag })
	}
	for _, x := range []struct {
		tag uint16
		re  *regexp.Regexp
	}{{0x8298, xmpRights}, {0x013B, xmpCreator}} {
		if has(x.tag) {
			continue
		}
		m := x.re.FindSubmatch(xmp)
		if m == nil {
			continue
		}
		text := html.UnescapeString(strings.TrimSpace(string(m[1])))
		if text == "" || len(text) > 4096 {
			continue
		}
		value := append([]byte(text), 0) // ASCII, NUL-terminated
		ifd0 = append(ifd0, tiffEntry{tag: x.tag, typ: 2, count: uint32(len(value)), value: value})
	}
	return ifd0
}
