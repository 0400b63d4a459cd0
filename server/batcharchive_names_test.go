package server

import (
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// TestArchiveNamesCarryNoBidiControlOrReservedName: an item's file name in
// a batch archive loses bidi controls (which disguise "gnp.exe" as
// "exe.png") and never is a Windows device name such as CON.png.
func TestArchiveNamesCarryNoBidiControlOrReservedName(t *testing.T) {
	cases := map[string]string{
		"cat\u202egnp.exe":  "catgnp.png",
		"\u2066a\u2069.png": "a.png",
		"CON.png":           "_CON.png",
		"con.jpg":           "_con.png",
		"Aux":               "_Aux.png",
		"nul.tar.png":       "_nul.tar.png",
		"COM1.png":          "_COM1.png",
		"lpt9.png":          "_lpt9.png",
		"COM¹.png":          "_COM¹.png",
		"CON .png":          "_CON.png",
		"console.png":       "console.png",
		"COM10.png":         "COM10.png",
		"a\x01b.png":        "a_b.png",
		"photo.png":         "photo.png",
	}
	for in, want := range cases {
		j := &connector.Job{ID: "0190c0de-0000-7000-8000-000000000001",
			Result: &connector.JobResult{Filename: in, MIMEType: "image/png"}}
		got := archiveName(j)
		if got != want {
			t.Errorf("archiveName(%q) = %q, want %q", in, got, want)
		}
		if strings.ContainsFunc(got, isBidiControl) {
			t.Errorf("archiveName(%q) = %q keeps a bidi control", in, got)
		}
	}
}
