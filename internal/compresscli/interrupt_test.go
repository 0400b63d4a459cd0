package compresscli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C at any moment of a run, then the same command again: every file
// written, each charged exactly once in all.
func TestCtrlCAtAnyMomentThenARerunChargesEachFileOnce(t *testing.T) {
	for _, after := range []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond, 250 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			settle(t)
			dir := filepath.Join(t.TempDir(), "photos")
			writeImages(t, dir, "ctrlc", 40)
			out := filepath.Join(t.TempDir(), "out")
			before := credits(t)
			ctx, cancel := context.WithTimeout(context.Background(), after)
			sum, _, stderr, err := compress(ctx, Options{Out: out, Paths: []string{dir}})
			cancel()
			if err != nil && !errors.Is(err, ErrInterrupted) {
				t.Fatalf("interrupted run: %v\n%s", err, stderr)
			}
			first := sum
			sum, stdout, stderr, err := compress(context.Background(), Options{Out: out, Paths: []string{dir}})
			if err != nil || sum.Failed != 0 || sum.Compressed+sum.Skipped != 40 {
				t.Fatalf("rerun: %+v %v (first run %+v)\n%s%s", sum, err, first, stdout, stderr)
			}
			settle(t)
			if got, _ := filepath.Glob(filepath.Join(out, "*.png")); len(got) != 40 {
				t.Errorf("%d files written; want 40", len(got))
			}
			if charged := before - credits(t); charged != 40 {
				t.Errorf("Ctrl-C after %s, then a rerun: %d credits for 40 files (first run %+v, rerun %+v)", after, charged, first, sum)
			}
		})
	}
}

// The bar stops where the run stopped: never drawn at 100 % for files not
// done.
func TestAnInterruptedBarStaysWhereItIs(t *testing.T) {
	var stderr bytes.Buffer
	rep := newReporter(Options{Terminal: true, Stderr: &stderr}, 10)
	s := Summary{Total: 10}
	for range 3 {
		r := result{File: "x.png", Status: "compressed", OriginalSize: 100, CompressedSize: 50}
		s.add(r)
		rep.file(r, s)
	}
	rep.finish(s, time.Second, true)
	if strings.Contains(stderr.String(), "10/10") || strings.Contains(stderr.String(), "100%") {
		t.Errorf("an interrupted bar was drawn full:\n%q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted with 3 of 10 files done") {
		t.Errorf("want what was done said:\n%q", stderr.String())
	}
}

// The command itself, stopped with SIGINT: exit status 130, how to resume
// is the command to paste, and running it writes every file, each paid
// once in all.
func TestSIGINTStopsTheCommandAndSaysHowToResume(t *testing.T) {
	settle(t)
	dir := filepath.Join(t.TempDir(), "my photos")
	writeImages(t, dir, "sigint", 40)
	out := filepath.Join(t.TempDir(), "out")
	before := credits(t)
	cmd := exec.Command(dev.bin, "compress", "--api", dev.api, "--out", out, dir)
	cmd.Env = append(os.Environ(), "IMGFLOW_API_KEY="+dev.key)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Scan() // the first file done: the run is under way
	cmd.Process.Signal(syscall.SIGINT)
	for lines.Scan() {
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v; want 130\n%s", err, stderr.String())
	}
	// The program as it was run (here the binary's path), so the line
	// pastes into a shell as it is.
	want := fmt.Sprintf("%s compress --api %s --out %s '%s'", dev.bin, dev.api, out, dir)
	if !strings.Contains(stderr.String(), "To resume") || !strings.Contains(stderr.String(), want) {
		t.Fatalf("want how to resume, with %q:\n%s", want, stderr.String())
	}
	again := exec.Command("sh", "-c", want) // pasted
	again.Env = cmd.Env
	if res, err := again.CombinedOutput(); err != nil {
		t.Fatalf("the resume command: %v\n%s", err, res)
	}
	settle(t)
	if got, _ := filepath.Glob(filepath.Join(out, "*.png")); len(got) != 40 {
		t.Errorf("%d files written; want 40", len(got))
	}
	if charged := before - credits(t); charged != 40 {
		t.Errorf("SIGINT then the resume command: %d credits for 40 files", charged)
	}
}
