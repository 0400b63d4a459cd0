package worker

import "testing"

// A name learnt from a fetch (Content-Disposition, the URL's path) is not
// checked at creation: its invisible characters are removed from the
// result's filename.
func TestInvisibleCharactersLeaveTheResultsFilename(t *testing.T) {
	for in, want := range map[string]string{
		"a\u200b.png":           "a.png",
		"\ufeffphoto.jpg":       "photo.png",
		"in\u00advoice.png":     "invoice.png",
		"a\U000E0041\u2060.png": "a.png",
		"a\u2028b\u2029.png":    "ab.png",
	} {
		if got := filenameFor(in, "image/png"); got != want {
			t.Errorf("filenameFor(%q) = %q, want %q", in, got, want)
		}
	}
}
