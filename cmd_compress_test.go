package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/compresscli"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// compressFiles runs imgflow compress against the system.
func compressFiles(s *systemtest.System, o compresscli.Options) (compresscli.Summary, string, string, error) {
	var stdout, stderr bytes.Buffer
	o.API, o.Key, o.Stdout, o.Stderr = s.API, s.Key, &stdout, &stderr
	sum, err := compresscli.Run(context.Background(), o)
	return sum, stdout.String(), stderr.String(), err
}

// The resume line is the command to paste: arguments a shell would split
// or expand are quoted.
func TestCompressResumeCommandQuotesWhatAShellWouldSplit(t *testing.T) {
	got := commandLine([]string{"./imgflow", "compress", "--out", "small/", "my photos", "shots/*.png", "it's"})
	want := `./imgflow compress --out small/ 'my photos' 'shots/*.png' 'it'\''s'`
	if got != want {
		t.Errorf("commandLine = %s\nwant %s", got, want)
	}
}

// The resume line names the program as it was run: os.Args[0] (here the
// test binary, run by go test, not go run), not a fixed "imgflow".
func TestCompressResumeCommandNamesTheProgramAsRun(t *testing.T) {
	got := resumeCommand([]string{"--in-place", "photos"})
	want := commandLine([]string{os.Args[0], "compress", "--in-place", "photos"})
	if got != want {
		t.Errorf("resumeCommand = %s\nwant %s", got, want)
	}
	if goRunWords(os.Getpid()) != nil {
		t.Error("this test process is taken for go run")
	}
}

// A folder larger than one batch on a server whose cap of unfinished jobs
// is smaller than a batch: the batches after the first wait for the key's
// places (429 too_many_jobs) and go when the first drains, so every file
// is written; none fails for the cap.
func TestCompressWaitsForTheKeysCapBetweenBatches(t *testing.T) {
	s := systemtest.Start(t, func(o *system.Options) { o.MaxJobsPerKey = 20 })
	dir := t.TempDir()
	png := images.Read(t, "screenshot.png")
	for i := range 101 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shot-%03d.png", i)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, stdout, stderr, err := compressFiles(s, compresscli.Options{Out: filepath.Join(t.TempDir(), "small"), Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 101 || sum.Failed != 0 || sum.Compressed+sum.Kept+sum.Skipped != 101 {
		t.Fatalf("summary %+v, want 101 files and none failed\nstdout (end):\n%.2000s\nstderr:\n%s", sum, stdout[max(0, len(stdout)-2000):], stderr)
	}
}
