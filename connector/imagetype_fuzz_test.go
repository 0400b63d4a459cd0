package connector

import (
	"bytes"
	"testing"
)

// FuzzSniffImageType: any bytes get an answer from the accepted set, and a
// positive answer is backed by the format's magic bytes. (The reference
// upstream's sniffer must agree byte for byte: see
// fixtures/upstream/codec's FuzzSniffAgreesWithTheConnector.)
func FuzzSniffImageType(f *testing.F) {
	for _, s := range []string{
		"", "\x89PNG\r\n\x1a\n", "\x89PNG\r\n\x1a", "\xFF\xD8\xFF\xE0", "\xFF\xD8",
		"RIFF\x10\x00\x00\x00WEBPVP8 ", "RIFF\x10\x00\x00\x00WEBX",
		"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf",
		"\x00\x00\x00\x1cftypmif1\x00\x00\x00\x00mif1avifmiaf",
		"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic",
		"\x00\x00\x00\x0cftypavif", "\x00\x00\x01\x00ftypavif\x00\x00\x00\x00avif",
		"GIF89a\x01\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := SniffImageType(data)
		var magic bool
		switch got {
		case "":
			return
		case "image/png":
			magic = bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
		case "image/jpeg":
			magic = bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF})
		case "image/webp":
			magic = len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP"
		case "image/avif":
			magic = len(data) >= 16 && string(data[4:8]) == "ftyp"
		default:
			t.Fatalf("SniffImageType(%q) = %q, not an accepted type", data, got)
		}
		if !magic {
			t.Fatalf("SniffImageType(%q) = %q without that format's magic bytes", data, got)
		}
		if ExtensionOf(got) == "" {
			t.Fatalf("no extension for %q", got)
		}
	})
}
