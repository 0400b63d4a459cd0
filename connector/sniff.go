package connector

import (
	"bytes"
	"encoding/binary"
)

// MIME types of the image formats imgflow and the compression API accept.
const (
	MIMEPNG  = "image/png"
	MIMEJPEG = "image/jpeg"
	MIMEWebP = "image/webp"
	MIMEAVIF = "image/avif"
)

// SniffLen is how many leading bytes SniffImageType needs at most.
const SniffLen = 64

// SniffImageType names the format of an image from its first bytes (the
// magic numbers of PNG, JPEG, WebP and AVIF), or returns "" for anything
// else. It never trusts a declared type or a file name.
func SniffImageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return MIMEPNG
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return MIMEJPEG
	case len(head) >= 12 && string(head[0:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return MIMEWebP
	case isAVIF(head):
		return MIMEAVIF
	}
	return ""
}

// isAVIF looks for an ISO-BMFF "ftyp" box whose major or compatible brands
// name AVIF (avif for still images, avis for sequences).
func isAVIF(head []byte) bool {
	if len(head) < 16 || string(head[4:8]) != "ftyp" {
		return false
	}
	end := int(binary.BigEndian.Uint32(head[0:4]))
	if end > len(head) {
		end = len(head)
	}
	isBrand := func(b []byte) bool { return string(b) == "avif" || string(b) == "avis" }
	if isBrand(head[8:12]) {
		return true
	}
	// head[12:16] is the minor version; compatible brands follow.
	for i := 16; i+4 <= end; i += 4 {
		if isBrand(head[i : i+4]) {
			return true
		}
	}
	return false
}
