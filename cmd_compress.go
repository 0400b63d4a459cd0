package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"golang.org/x/term"

	"github.com/imgflow/imgflow/internal/compresscli"
)

const compressUsage = `Compress image files, folders (recursively) and globs through an imgflow API,
as batches, and write the results under --out DIR (keeping relative paths)
or --in-place (a file is replaced only when the result is smaller).

The key comes from $IMGFLOW_API_KEY, else from the first line of standard
input, never from the command line (where ps would show it):
  IMGFLOW_API_KEY=$KEY imgflow compress --out small/ photos/ 'shots/*.png'
  echo "$KEY" | imgflow compress --in-place photos/

A folder contributes its PNG, JPEG, WebP, AVIF and HEIC files; other image
types (GIF, TIFF, PDF, ...) are named and not sent, the --out folder is never
read, and symlinks leading out of the folder are not followed unless
--follow-symlinks. Results keep the original's permissions (and owner where
allowed); --in-place replaces a file atomically.

On a terminal a progress bar shows files done, bytes saved, rate and ETA;
otherwise one line per file (--json: one JSON object per file). The exit
status is 1 if any file failed. A second run of the same command charges
nothing for what is done: finished files are skipped, and batches sent
before (Ctrl-C) are followed or sent again under the same Idempotency-Key,
never paid again.`

// compressFlags registers flags of `imgflow compress` defined in other
// files (e.g. transforms: fs.String(...) then o.Fields.Set("resize", v) in
// apply); each returns a function run after parsing that puts its values
// into the options.
var compressFlags []func(fs *flagSet) (apply func(o *compresscli.Options) error)

// runCompress is `imgflow compress`.
func runCompress(ctx context.Context, args []string) error {
	var o compresscli.Options
	fs := newFlagSet("compress", compressUsage)
	fs.String(&o.API, "api", "IMGFLOW_API", "http://127.0.0.1:8080", "the imgflow API's base URL")
	fs.String(&o.Out, "out", "", "", "write results under this folder, keeping relative paths")
	fs.Bool(&o.InPlace, "in-place", "", false, "replace each file by its result when the result is smaller")
	fs.Bool(&o.KeepMtime, "keep-mtime", "", false, "give each result its original's modification time")
	fs.Bool(&o.FollowSymlinks, "follow-symlinks", "", false, "follow symlinks that lead out of a folder argument")
	fs.Bool(&o.JSON, "json", "", false, "print one JSON object per file instead of a line of text")
	var applies []func(*compresscli.Options) error
	for _, register := range compressFlags {
		applies = append(applies, register(fs))
	}
	fs.String(&o.Transform.Resize, "resize", "", "", "resize each image: 1600x (width), x900 (height) or 400x400 (a box); never enlarges")
	fs.String(&o.Transform.ResizeMethod, "resize-method", "", "", "scale, fit or cover (fills the box, cropped around the most interesting part)")
	fs.String(&o.Transform.MaxSize, "max-size", "", "", "fit each image under this size, for its one credit: 100KB, 1.5MB, 200KiB or bytes (quality first, then dimensions)")
	fs.String(&o.Transform.MinScore, "min-score", "", "", "with --max-size: the least SSIMULACRA2 score (0–100; 90 looks lossless, 70 high web quality) each file keeps; fewer pixels rather than worse ones")
	fs.Bool(&o.Transform.NoResize, "max-size-no-resize", "", false, "with --max-size: fit by quality only, never smaller dimensions (a file that cannot fit fails)")
	fs.String(&o.Transform.Convert, "convert", "", "", "convert each image to webp, avif, jpeg or png (HEIC photos become jpeg anyway)")
	fs.String(&o.Transform.Preserve, "preserve", "", "", "metadata to keep: copyright, creation, location (comma-separated); none by default")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	o.Paths = paths
	for _, apply := range applies {
		if err := apply(&o); err != nil {
			return err
		}
	}
	if o.Key, err = readKey(stdin); err != nil {
		return err
	}
	o.Stdout, o.Stderr = os.Stdout, os.Stderr
	o.Terminal = !o.JSON && term.IsTerminal(int(os.Stderr.Fd()))
	// After the first Ctrl-C the run finishes recording the batch under
	// way (a few seconds at most); a second one stops at once.
	again := make(chan os.Signal, 1)
	defer signal.Stop(again)
	stopWatch := context.AfterFunc(ctx, func() {
		signal.Notify(again, os.Interrupt)
		go func() {
			if _, ok := <-again; ok {
				fmt.Fprintf(os.Stderr, "\nstopped at once. To resume: %s\n", resumeCommand(args))
				os.Exit(130)
			}
		}()
	})
	defer stopWatch()
	sum, err := compresscli.Run(ctx, o)
	var usage *compresscli.UsageError
	switch {
	case errors.As(err, &usage):
		// Refused before anything was sent: nothing is charged.
		fmt.Fprintf(os.Stderr, "imgflow compress: %s\n", usage.Msg)
		os.Exit(2)
	case errors.Is(err, compresscli.ErrInterrupted):
		fmt.Fprintf(os.Stderr, "stopped. To resume, run the same command again (files done are skipped, batches sent are followed or sent again under the same key, so nothing is charged twice):\n  %s\n", resumeCommand(args))
		os.Exit(130)
	case err != nil:
		return err
	case sum.Failed > 0:
		return fmt.Errorf("%d of %d %s failed", sum.Failed, sum.Total, plural(sum.Total, "file"))
	}
	return nil
}

// resumeCommand is the command that was run, for the user to paste: the
// program as it was run (./imgflow, imgflow, or go run . when go run
// started it), then compress and the arguments.
func resumeCommand(args []string) string {
	return commandLine(append(append(programAsRun(), "compress"), args...))
}

// commandLine joins words as a shell reads them back: arguments a shell
// would split or expand are quoted.
func commandLine(words []string) string {
	parts := make([]string, len(words))
	for i, a := range words {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\*?[]()&;|<>!#~{}") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// programAsRun is how this program was started: go run and its flags and
// package when go run is its parent (gorun.go), else os.Args[0] as typed
// (./imgflow, imgflow, /usr/local/bin/imgflow).
func programAsRun() []string {
	if words := goRunWords(os.Getppid()); words != nil {
		return words
	}
	return []string{os.Args[0]}
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
