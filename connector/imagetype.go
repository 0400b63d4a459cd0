package connector

import "bytes"

// SniffImageType returns the media type of an accepted image format
// (image/png, image/jpeg, image/webp, image/avif) judged by its first bytes,
// or "" when data is none of them. Declared types and file names are not
// trusted: the compression API sniffs the same way.
func SniffImageType(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case len(data) >= 12 && bytes.Equal(data[0:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("WEBP")):
		return "image/webp"
	case len(data) >= 16 && bytes.Equal(data[4:8], []byte("ftyp")) && isAVIFBrand(data):
		return "image/avif"
	}
	return ""
}

// SniffInputType is SniffImageType plus the types imgflow takes as input
// and converts before the compression API sees them: image/heic and
// image/heif (phone photos).
func SniffInputType(data []byte) string {
	if t := SniffImageType(data); t != "" {
		return t
	}
	if len(data) >= 16 && bytes.Equal(data[4:8], []byte("ftyp")) {
		return heifBrand(data)
	}
	return ""
}

// heifBrand is image/heic for an ftyp box naming an HEVC-coded HEIF brand,
// image/heif for the generic mif1/msf1, "" otherwise. The compression API
// takes neither: imgflow converts them first (connector/imaging).
func heifBrand(data []byte) string {
	size := int(data[0])<<24 | int(data[1])<<16 | int(data[2])<<8 | int(data[3])
	if size < 16 || size > len(data) {
		return ""
	}
	found := ""
	for i := 8; i+4 <= size; i += 4 {
		if i == 12 {
			continue
		}
		switch string(data[i : i+4]) {
		case "heic", "heix", "heim", "heis", "hevc", "hevx":
			return "image/heic"
		case "mif1", "msf1":
			found = "image/heif"
		}
	}
	return found
}

// isAVIFBrand looks for avif/avis among the ftyp box's major and compatible
// brands. A box whose size is under 16 bytes or past the end of data is no
// AVIF header: the compression API refuses it too (a truncated file).
func isAVIFBrand(data []byte) bool {
	size := int(data[0])<<24 | int(data[1])<<16 | int(data[2])<<8 | int(data[3])
	if size < 16 || size > len(data) {
		return false
	}
	for i := 8; i+4 <= size; i += 4 {
		if i == 12 { // minor version, not a brand
			continue
		}
		if b := string(data[i : i+4]); b == "avif" || b == "avis" {
			return true
		}
	}
	return false
}

// ExtensionOf is the usual file extension for an accepted media type.
func ExtensionOf(mimeType string) string {
	switch mimeType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	case "image/avif":
		return ".avif"
	case "image/heic":
		return ".heic"
	case "image/heif":
		return ".heif"
	}
	return ""
}
