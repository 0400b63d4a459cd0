package compresscli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// result is what became of one file.
type result struct {
	File           string `json:"file"`
	Status         string `json:"status"` // compressed, kept (the result was not smaller), skipped (done before), failed, unsupported (not sent)
	OriginalSize   int64  `json:"original_size,omitempty"`
	CompressedSize int64  `json:"compressed_size,omitempty"`
	Output         string `json:"output,omitempty"`
	ErrorCode      string `json:"error_code,omitempty"`
	Error          string `json:"error,omitempty"`
}

// Summary counts a run's files.
type Summary struct {
	Total      int   `json:"total"`
	Compressed int   `json:"compressed"`
	Kept       int   `json:"kept"`
	Skipped    int   `json:"skipped"`
	Failed     int   `json:"failed"`
	SavedBytes int64 `json:"saved_bytes"`
	// Unsupported counts the files of a folder not sent: types the API
	// does not compress (not in Total).
	Unsupported int `json:"unsupported"`
}

func (s *Summary) add(r result) {
	switch r.Status {
	case "compressed":
		s.Compressed++
		s.SavedBytes += r.OriginalSize - r.CompressedSize
	case "kept":
		s.Kept++
	case "skipped":
		s.Skipped++
	case "failed":
		s.Failed++
	}
}

// reporter shows the run: a progress bar on a terminal, else a line (or a
// JSON line) per file.
type reporter interface {
	file(r result, s Summary)
	// finish ends the run's report; interrupted (Ctrl-C) leaves the bar
	// where it is.
	finish(s Summary, took time.Duration, interrupted bool)
}

func newReporter(o Options, total int) reporter {
	if o.JSON {
		return &jsonReporter{out: o.Stdout, errOut: o.Stderr}
	}
	if o.Terminal {
		bar := progressbar.NewOptions(total,
			progressbar.OptionSetWriter(o.Stderr),
			progressbar.OptionSetDescription("saved 0 B"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("files"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
		)
		return &barReporter{bar: bar, out: o.Stderr}
	}
	return &lineReporter{out: o.Stdout, errOut: o.Stderr}
}

// barReporter draws files done / total, bytes saved, rate and ETA; a
// failure is printed above the bar.
type barReporter struct {
	bar *progressbar.ProgressBar
	out io.Writer
}

func (b *barReporter) file(r result, s Summary) {
	if r.Status == "failed" {
		b.bar.Clear()
		fmt.Fprintln(b.out, line(r))
	}
	b.bar.Describe("saved " + bytesText(s.SavedBytes))
	b.bar.Add(1)
}

func (b *barReporter) finish(s Summary, took time.Duration, interrupted bool) {
	if interrupted || s.Compressed+s.Kept+s.Skipped+s.Failed < s.Total {
		b.bar.Exit() // stays at the files done, never jumps to 100 %
	} else {
		b.bar.Finish()
	}
	fmt.Fprintln(b.out)
	fmt.Fprintln(b.out, summaryLine(s, took, interrupted))
}

type lineReporter struct{ out, errOut io.Writer }

func (l *lineReporter) file(r result, _ Summary) { fmt.Fprintln(l.out, line(r)) }
func (l *lineReporter) finish(s Summary, took time.Duration, interrupted bool) {
	fmt.Fprintln(l.errOut, summaryLine(s, took, interrupted))
}

type jsonReporter struct{ out, errOut io.Writer }

func (j *jsonReporter) file(r result, _ Summary) {
	data, _ := json.Marshal(r)
	fmt.Fprintf(j.out, "%s\n", data)
}
func (j *jsonReporter) finish(s Summary, took time.Duration, interrupted bool) {
	fmt.Fprintln(j.errOut, summaryLine(s, took, interrupted))
}

func line(r result) string {
	switch r.Status {
	case "compressed":
		// A transform or a type change may be larger than the original: +.
		return fmt.Sprintf("compressed %s: %s -> %s (%+.1f%%) -> %s", r.File, bytesText(r.OriginalSize), bytesText(r.CompressedSize),
			100*float64(r.CompressedSize-r.OriginalSize)/float64(max(r.OriginalSize, 1)), r.Output)
	case "kept":
		return fmt.Sprintf("kept       %s: the result (%s) was not smaller than %s -> %s", r.File, bytesText(r.CompressedSize), bytesText(r.OriginalSize), r.Output)
	case "skipped":
		return fmt.Sprintf("skipped    %s: done by an earlier run", r.File)
	}
	return fmt.Sprintf("failed     %s: %s (%s)", r.File, r.Error, r.ErrorCode)
}

func summaryLine(s Summary, took time.Duration, interrupted bool) string {
	line := fmt.Sprintf("%d %s: %d compressed, %d kept (not smaller), %d skipped (done before), %d failed", s.Total, plural(s.Total, "file"), s.Compressed, s.Kept, s.Skipped, s.Failed)
	if s.Unsupported > 0 {
		line += fmt.Sprintf("; %d not sent (not %s)", s.Unsupported, formatNames())
	}
	line += fmt.Sprintf("; saved %s in %s", bytesText(s.SavedBytes), took.Round(100*time.Millisecond))
	if interrupted {
		line = fmt.Sprintf("interrupted with %d of %d %s done; %s", s.Compressed+s.Kept+s.Skipped+s.Failed, s.Total, plural(s.Total, "file"), line)
	}
	return line
}

// bytesText is n in B, KB, MB (powers of 1,000).
func bytesText(n int64) string {
	switch {
	case n < 1000 && n > -1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000_000 && n > -1000_000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
