package server

import (
	"mime"

	"github.com/imgflow/imgflow/connector"
)

// render is the job as a caller sees it: with a signed file_url that works
// without the key until the result expires. Webhook payloads are the same
// view (connector.View).
func (s *Server) render(j *connector.Job) *connector.Job { return s.view().Job(j) }

// view is the one public view of jobs and batches, with this server's
// links.
func (s *Server) view() connector.View {
	return s.cfg.Keyring.View(s.cfg.PublicURL, s.cfg.ResultTTL, s.cfg.FileURL)
}

func mimeDisposition(filename string) string {
	filename = connector.WithoutInvisible(filename)
	if filename == "" {
		return "attachment"
	}
	return mime.FormatMediaType("attachment", map[string]string{"filename": filename})
}
