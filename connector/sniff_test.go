package connector

import "testing"

func TestSniffImageTypeNamesTheFourFormats(t *testing.T) {
	cases := []struct {
		name string
		head []byte
		want string
	}{
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), MIMEPNG},
		{"jpeg", []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 'J', 'F', 'I', 'F'}, MIMEJPEG},
		{"webp", []byte("RIFF\x24\x00\x00\x00WEBPVP8 "), MIMEWebP},
		{"avif major brand", []byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf"), MIMEAVIF},
		{"avif compatible brand", []byte("\x00\x00\x00\x1cftypmif1\x00\x00\x00\x00mif1avifmiaf"), MIMEAVIF},
		{"mp4 is not avif", []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"), ""},
		{"gif", []byte("GIF89a\x01\x00\x01\x00"), ""},
		{"html", []byte("<!doctype html><html>"), ""},
		{"empty", nil, ""},
		{"short riff", []byte("RIFF"), ""},
	}
	for _, c := range cases {
		if got := SniffImageType(c.head); got != c.want {
			t.Errorf("%s: expected %q, got %q", c.name, c.want, got)
		}
	}
}
