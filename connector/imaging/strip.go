package imaging

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// Strip removes an image's metadata without touching its pixels or their
// encoding: it is what a kept original (a file whose compressed result was
// not smaller) becomes, so that a result never carries metadata its caller
// did not ask to keep. It is plain Go, with no libvips.
//
//   - JPEG: every APPn segment and comment goes but JFIF (APP0), the ICC
//     profile (APP2 ICC_PROFILE) and Adobe's colour transform (APP14), which
//     the decoder needs to show the same colours; an EXIF orientation other
//     than 1 is written back alone, in a minimal EXIF segment, so the
//     picture is shown the same way up.
//   - PNG: text chunks (tEXt, zTXt, iTXt), eXIf and tIME go, but an eXIf's
//     orientation other than 1, kept alone as for JPEG.
//   - Anything else, or bytes that do not parse, come back as they were.
//
// It reports whether anything was removed.
func Strip(data []byte) ([]byte, bool) {
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8}):
		return stripJPEG(data)
	case bytes.HasPrefix(data, pngSignature):
		return stripPNG(data)
	}
	return data, false
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

func stripJPEG(data []byte) ([]byte, bool) {
	out := make([]byte, 0, len(data))
	out = append(out, 0xFF, 0xD8)
	orientation := 1
	removed := false
	at := 2 // where the orientation goes: after SOI, or after JFIF when it comes first
	i := 2
	for {
		if i+4 > len(data) || data[i] != 0xFF {
			return data, false
		}
		marker := data[i+1]
		if marker == 0xFF { // fill byte
			i++
			continue
		}
		if marker == 0xDA || marker == 0xD9 { // start of scan: the rest is pixels
			if orientation != 1 {
				out = append(out[:at], append(jpegOrientationSegment(orientation), out[at:]...)...)
			}
			out = append(out, data[i:]...)
			return out, removed
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		end := i + 2 + n
		if n < 2 || end > len(data) {
			return data, false
		}
		body := data[i+4 : end]
		keep := true
		switch {
		case marker == 0xE0: // JFIF
		case marker == 0xE2 && bytes.HasPrefix(body, []byte("ICC_PROFILE\x00")):
		case marker == 0xEE: // Adobe
		case marker == 0xE1 && bytes.HasPrefix(body, []byte("Exif\x00\x00")):
			if o := tiffOrientation(body[6:]); o > 1 && o <= 8 {
				orientation = o
			}
			keep = false
		case marker >= 0xE0 && marker <= 0xEF, marker == 0xFE: // other APPn, COM
			keep = false
		}
		if keep {
			out = append(out, data[i:end]...)
			if marker == 0xE0 && i == 2 {
				at = len(out)
			}
		} else {
			removed = true
		}
		i = end
	}
}

func stripPNG(data []byte) ([]byte, bool) {
	out := make([]byte, 0, len(data))
	out = append(out, pngSignature...)
	removed := false
	for i := len(pngSignature); i < len(data); {
		if i+12 > len(data) {
			return data, false
		}
		n := int(binary.BigEndian.Uint32(data[i:]))
		end := i + 12 + n
		if n < 0 || end > len(data) {
			return data, false
		}
		typ := string(data[i+4 : i+8])
		switch typ {
		case "tEXt", "zTXt", "iTXt", "tIME":
			removed = true
		case "eXIf":
			removed = true
			if o := tiffOrientation(data[i+8 : i+8+n]); o > 1 && o <= 8 {
				out = append(out, pngChunk("eXIf", orientationTIFF(o))...)
			}
		default:
			out = append(out, data[i:end]...)
		}
		i = end
		if typ == "IEND" {
			break
		}
	}
	return out, removed
}

func pngChunk(typ string, body []byte) []byte {
	c := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	c = append(c, typ...)
	c = append(c, body...)
	return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
}

// jpegOrientationSegment is an APP1 EXIF segment holding only the
// orientation.
func jpegOrientationSegment(o int) []byte {
	body := append([]byte("Exif\x00\x00"), orientationTIFF(o)...)
	seg := []byte{0xFF, 0xE1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(len(body)+2))
	return append(seg, body...)
}

// orientationTIFF is a TIFF structure whose one IFD holds the orientation.
func orientationTIFF(o int) []byte {
	b := []byte("MM\x00\x2a\x00\x00\x00\x08")
	b = binary.BigEndian.AppendUint16(b, 1)      // one entry
	b = binary.BigEndian.AppendUint16(b, 0x0112) // Orientation
	b = binary.BigEndian.AppendUint16(b, 3)      // SHORT
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(o))
	b = append(b, 0, 0)
	return binary.BigEndian.AppendUint32(b, 0) // no next IFD
}

// tiffOrientation reads the orientation tag of a TIFF structure's first
// IFD; 0 when it has none or does not parse.
func tiffOrientation(b []byte) int {
	if len(b) < 8 {
		return 0
	}
	var order binary.ByteOrder
	switch string(b[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return 0
	}
	off := int(order.Uint32(b[4:]))
	if off < 8 || off+2 > len(b) {
		return 0
	}
	n := int(order.Uint16(b[off:]))
	for k := 0; k < n; k++ {
		e := off + 2 + 12*k
		if e+12 > len(b) {
			return 0
		}
		if order.Uint16(b[e:]) == 0x0112 && order.Uint16(b[e+2:]) == 3 {
			return int(order.Uint16(b[e+8:]))
		}
	}
	return 0
}
