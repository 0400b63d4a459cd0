package connector

import "testing"

func TestSniffImageTypeJudgesByBytes(t *testing.T) {
	cases := []struct {
		name string
		data string
		want string
	}{
		{"png", "\x89PNG\r\n\x1a\n\x00\x00", "image/png"},
		{"jpeg", "\xFF\xD8\xFF\xE0rest", "image/jpeg"},
		{"webp", "RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"},
		{"avif", "\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf", "image/avif"},
		{"avif compatible brand", "\x00\x00\x00\x1cftypmif1\x00\x00\x00\x00mif1avifmiaf", "image/avif"},
		{"heic is not avif", "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", ""},
		{"gif", "GIF89a\x01\x00", ""},
		{"text", "hello, this is not an image", ""},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		if got := SniffImageType([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: SniffImageType = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSniffInputTypeTakesPhonePhotos(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", "image/heic"},
		{"\x00\x00\x00\x14ftypmif1\x00\x00\x00\x00mif1", "image/heif"},
		{"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf", "image/avif"},
		{"\x00\x00\x00\x18ftypisom\x00\x00\x00\x00isommp41", ""},
	} {
		if got := SniffInputType([]byte(c.data)); got != c.want {
			t.Errorf("SniffInputType(%q) = %q, want %q", c.data, got, c.want)
		}
	}
}
