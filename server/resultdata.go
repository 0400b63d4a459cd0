package server

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// answerWithData answers 200 with a completed job whose
// result.compressed_data carries the compressed bytes in base64, streamed
// from the blob store as the caller reads.
//
// Why not c.JSON: a 10 MiB result is 13.3 MiB of base64, and building the
// answer in memory held the bytes, their base64 string and the JSON
// encoder's buffer grown by doubling: six to eight times the image. Here
// the job is encoded as c.JSON would, with a random placeholder where the
// data goes, and the answer is the text before it, the base64 of the blob,
// then the text after it; the Content-Length is known ahead.
func (s *Server) answerWithData(c echo.Context, view *connector.Job) error {
	blob, err := s.cfg.Blobs.Open(c.Request().Context(), connector.OutputBlobKey(view.ID))
	if err != nil {
		return resultGone(err, view.ID)
	}
	defer blob.Close()
	placeholder, err := randomPlaceholder()
	if err != nil {
		return err
	}
	result := *view.Result
	result.CompressedData = placeholder
	view.Result = &result
	doc, err := encodeLikeEcho(c, view)
	if err != nil {
		return err
	}
	before, after, found := bytes.Cut(doc, []byte(`"`+placeholder+`"`))
	if !found {
		return fmt.Errorf("render job %s: the data placeholder is missing from its JSON", view.ID)
	}
	size := len(before) + 2 + base64.StdEncoding.EncodedLen(int(blob.Size)) + len(after)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set(echo.HeaderContentLength, strconv.Itoa(size))
	c.Response().WriteHeader(http.StatusOK)
	// A read error after the first bytes can only cut the answer short;
	// the Content-Length tells the client.
	w := &stickyWriter{w: c.Response()}
	w.Write(before)
	w.Write([]byte{'"'})
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := io.Copy(enc, blob); err != nil {
		return err
	}
	enc.Close()
	w.Write([]byte{'"'})
	w.Write(after)
	return w.err
}

// stickyWriter stops writing at the first error and keeps it.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	var n int
	n, s.err = s.w.Write(p)
	return n, s.err
}

// encodeLikeEcho encodes v as c.JSON would write it: encoding/json's
// Encoder (HTML escaped, a final newline), indented under ?pretty or in
// Echo's debug mode.
func encodeLikeEcho(c echo.Context, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if _, pretty := c.QueryParams()["pretty"]; pretty || c.Echo().Debug {
		enc.SetIndent("", "  ")
	}
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// randomPlaceholder is a string no job's JSON contains by chance (metadata
// is the caller's, so a fixed marker could be planted there), made of
// characters JSON never escapes.
func randomPlaceholder() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "imgflow-data-" + hex.EncodeToString(b[:]), nil
}
