package main

import (
	"context"
	"errors"
	"fmt"
	"os"

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

On a terminal a progress bar shows files done, bytes saved, rate and ETA;
otherwise one line per file (--json: one JSON object per file). The exit
status is 1 if any file failed. A second run of the same command charges
nothing for what is done: finished files are skipped, and batches sent
before (Ctrl-C) are followed or reused, never paid again.`

// runCompress is `imgflow compress`.
func runCompress(ctx context.Context, args []string) error {
	var o compresscli.Options
	fs := newFlagSet("compress", compressUsage)
	fs.String(&o.API, "api", "IMGFLOW_API", "http://127.0.0.1:8080", "the imgflow API's base URL")
	fs.String(&o.Out, "out", "", "", "write results under this folder, keeping relative paths")
	fs.Bool(&o.InPlace, "in-place", "", false, "replace each file by its result when the result is smaller")
	fs.Bool(&o.JSON, "json", "", false, "print one JSON object per file instead of a line of text")
	fs.String(&o.Transform.Resize, "resize", "", "", "resize each image: 1600x (width), x900 (height) or 400x400 (a box); never enlarges")
	fs.String(&o.Transform.ResizeMethod, "resize-method", "", "", "scale, fit or cover (fills the box, cropped around the most interesting part)")
	fs.String(&o.Transform.Convert, "convert", "", "", "convert each image to webp, avif, jpeg or png (HEIC photos become jpeg anyway)")
	fs.String(&o.Transform.Preserve, "preserve", "", "", "metadata to keep: copyright, creation, location (comma-separated); none by default")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	o.Paths = paths
	if o.Key, err = readKey(stdin); err != nil {
		return err
	}
	o.Stdout, o.Stderr = os.Stdout, os.Stderr
	o.Terminal = !o.JSON && term.IsTerminal(int(os.Stderr.Fd()))
	sum, err := compresscli.Run(ctx, o)
	switch {
	case errors.Is(err, compresscli.ErrInterrupted):
		fmt.Fprintln(os.Stderr, "interrupted: run the same command again to resume; files done are skipped and batches sent are followed, so nothing is charged twice")
		os.Exit(130)
	case err != nil:
		return err
	case sum.Failed > 0:
		return fmt.Errorf("%d of %d files failed", sum.Failed, sum.Total)
	}
	return nil
}
