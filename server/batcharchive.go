package server

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// GET /v1/batches/:id/archive streams a ZIP of every completed item's
// file, then manifest.json. What is held is one page of job records (read
// twice: files, then manifest), the names given so far and the copy
// buffer: each file streams from the blob store into the ZIP (stored, not
// deflated: the images are compressed already), so memory does not grow
// with the files, and with the batch only by its names.

// archivePage is how many job records are read at once.
const archivePage = 25

// manifestEntry is one item in manifest.json.
type manifestEntry struct {
	Index            int                 `json:"index"`
	JobID            string              `json:"job_id"`
	Status           connector.JobStatus `json:"status"`
	File             string              `json:"file,omitempty"` // its name in the archive
	OriginalSize     int64               `json:"original_size,omitempty"`
	CompressedSize   int64               `json:"compressed_size,omitempty"`
	CompressionRatio float64             `json:"compression_ratio,omitempty"`
	ErrorCode        connector.ErrorCode `json:"error_code,omitempty"`
	Error            string              `json:"error,omitempty"`
}

// getBatchArchive is GET /v1/batches/:id/archive, with the key or the
// signed token of the batch's links.archive.
func (s *Server) getBatchArchive(c echo.Context) error {
	if s.cfg.Batches == nil {
		return connector.Errorf(connector.ENOTFOUND, "batches are not served here")
	}
	ctx := c.Request().Context()
	b, err := byTokenOrKey(s, c, signedLink{"archive", s.cfg.Keyring.VerifyArchiveToken}, s.cfg.Batches.Get, s.ownedBatch)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/zip")
	h.Set(echo.HeaderContentDisposition, mimeDisposition("batch-"+b.ID+".zip"))
	h.Set("Cache-Control", "private, no-store")
	c.Response().WriteHeader(http.StatusOK)
	// From here on an error can only cut the archive short: the ZIP then
	// lacks its central directory, which every reader reports.
	if err := s.writeArchive(ctx, c.Response(), b); err != nil {
		s.logger(c).Warn("batch archive cut short", "batch_id", b.ID, "err", err)
	}
	return nil
}

// writeArchive writes the batch's ZIP to w: the files, then the manifest
// from a second read of the records, so that neither pass holds more than
// a page of them whatever the batch's size.
func (s *Server) writeArchive(ctx context.Context, w io.Writer, b *connector.Batch) error {
	zw := zip.NewWriter(w)
	names := connector.NewNames("manifest.json")
	files := make([]string, len(b.JobIDs)) // each item's name in the archive
	err := s.eachItem(ctx, b, func(i int, j *connector.Job) error {
		if j != nil && j.Status == connector.StatusCompleted && j.Result != nil {
			files[i] = s.archiveFile(ctx, zw, names, j)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The manifest's entry is dated like the batch (zw.Create would leave
	// it at the zero date): when it finished, or was made while it runs.
	modified := b.CreatedAt
	if b.FinishedAt != nil {
		modified = *b.FinishedAt
	}
	f, err := zw.CreateHeader(&zip.FileHeader{Name: "manifest.json", Method: zip.Deflate, Modified: modified})
	if err != nil {
		return err
	}
	// Written entry by entry: {"batch_id":..., "items":[{...},...]}.
	head, _ := json.Marshal(struct {
		BatchID    string                `json:"batch_id"`
		Status     connector.BatchStatus `json:"status"`
		Counts     connector.BatchCounts `json:"counts"`
		SavedBytes int64                 `json:"saved_bytes"`
		CreatedAt  time.Time             `json:"created_at"`
		FinishedAt *time.Time            `json:"finished_at"`
	}{b.ID, b.Status, b.Counts, b.SavedBytes, b.CreatedAt, b.FinishedAt})
	if _, err := fmt.Fprintf(f, "%s,\n\"items\": [", head[:len(head)-1]); err != nil {
		return err
	}
	err = s.eachItem(ctx, b, func(i int, j *connector.Job) error {
		e, _ := json.Marshal(manifestItem(i, b.JobIDs[i], j, files[i]))
		sep := ",\n  "
		if i == 0 {
			sep = "\n  "
		}
		_, err := fmt.Fprintf(f, "%s%s", sep, e)
		return err
	})
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, "\n]}\n"); err != nil {
		return err
	}
	return zw.Close()
}

// eachItem calls fn with each item's job in index order (nil when gone),
// reading archivePage records at a time.
func (s *Server) eachItem(ctx context.Context, b *connector.Batch, fn func(i int, j *connector.Job) error) error {
	for from := 0; from < len(b.JobIDs); from += archivePage {
		ids := b.JobIDs[from:min(from+archivePage, len(b.JobIDs))]
		jobs, err := s.cfg.Batches.GetJobs(ctx, ids)
		if err != nil {
			return err
		}
		for i, j := range jobs {
			if err := fn(from+i, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// manifestItem is item i's manifest entry; file is its name in the
// archive, "" when it is not there.
func manifestItem(i int, id string, j *connector.Job, file string) manifestEntry {
	if j == nil {
		return manifestEntry{Index: i, JobID: id, Status: connector.StatusFailed, ErrorCode: connector.ENOTFOUND, Error: "the job has expired"}
	}
	e := manifestEntry{Index: i, JobID: j.ID, Status: j.Status, File: file}
	if j.Error != nil {
		e.ErrorCode, e.Error = j.Error.Code, j.Error.Message
	}
	if j.Result != nil {
		e.OriginalSize, e.CompressedSize, e.CompressionRatio = j.Result.OriginalSize, j.Result.CompressedSize, j.Result.CompressionRatio
	}
	if j.Status == connector.StatusCompleted && file == "" {
		e.ErrorCode, e.Error = connector.ENOTFOUND, "the compressed file is no longer available"
	}
	return e
}

// archiveFile adds a completed job's file to the ZIP and returns its
// name there; "" when its file is gone or could not be read.
func (s *Server) archiveFile(ctx context.Context, zw *zip.Writer, names *connector.Names, j *connector.Job) string {
	blob, err := s.cfg.Blobs.Open(ctx, connector.OutputBlobKey(j.ID))
	if err != nil {
		return ""
	}
	defer blob.Close()
	name := names.Claim(archiveName(j))
	fh := &zip.FileHeader{Name: name, Method: zip.Store, Modified: j.UpdatedAt}
	if j.FinishedAt != nil {
		fh.Modified = *j.FinishedAt
	}
	fw, err := zw.CreateHeader(fh)
	if err == nil {
		_, err = io.Copy(fw, blob)
	}
	if err != nil {
		return "" // the entry is cut short; the manifest says the file is missing
	}
	return name
}

// archiveName is a completed job's file name in the archive: the item's
// filename (its base, without control or path characters) with the
// result's extension, or the job id when the item had none.
func archiveName(j *connector.Job) string {
	ext := connector.ExtensionOf(j.Result.MIMEType)
	name := path.Base(strings.ReplaceAll(j.Result.Filename, `\`, "/"))
	name = strings.Map(func(r rune) rune {
		switch {
		case isBidiControl(r), unicode.Is(unicode.Cf, r) && r != '\u200d':
			return -1 // invisible, and able to disguise the extension (U+202E)
		case unicode.IsControl(r) || strings.ContainsRune(`/\:*?"<>|`, r):
			return '_'
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	stem := strings.TrimRight(strings.TrimSuffix(name, path.Ext(name)), ". ")
	if stem == "" || name == "image"+ext { // the worker's name for an unnamed input
		stem = j.ID
	}
	if windowsReserved(stem) {
		stem = "_" + stem // CON.png opens the console on Windows, not a file
	}
	for len(stem) > 120 { // whole runes
		_, size := utf8.DecodeLastRuneInString(stem)
		stem = stem[:len(stem)-size]
	}
	if ext == "" {
		ext = path.Ext(name)
	}
	return stem + ext
}

// isBidiControl reports the Unicode bidirectional controls (embeddings,
// overrides, isolates and marks), which make "gnp.exe" look like "exe.png".
func isBidiControl(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' ||
		(r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// windowsReserved reports a stem Windows treats as a device whatever the
// extension: CON, PRN, AUX, NUL, COM0-9 and LPT0-9 (also with superscript
// digits), in any case, and with anything after a further dot.
func windowsReserved(stem string) bool {
	base, _, _ := strings.Cut(strings.ToUpper(strings.TrimSpace(stem)), ".")
	base = strings.TrimRight(base, " ")
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(base) >= 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) {
		switch base[3:] {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
			return true
		}
	}
	return false
}
