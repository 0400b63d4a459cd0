package main

import "testing"

// The resume line is the command to paste: arguments a shell would split
// or expand are quoted.
func TestCompressResumeCommandQuotesWhatAShellWouldSplit(t *testing.T) {
	got := resumeCommand([]string{"--out", "small/", "my photos", "shots/*.png", "it's"})
	want := `imgflow compress --out small/ 'my photos' 'shots/*.png' 'it'\''s'`
	if got != want {
		t.Errorf("resumeCommand = %s\nwant %s", got, want)
	}
}
