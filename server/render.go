package server

import (
	"mime"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// render is the job as a caller sees it: with a signed file_url that works
// without the key until the result expires. Webhook payloads are the same
// view (connector.View).
func (s *Server) render(j *connector.Job) *connector.Job { return s.view().Job(j) }

// view is the one public view of jobs and batches, with this server's
// links.
func (s *Server) view() connector.View {
	return connector.View{PublicURL: s.cfg.PublicURL, ResultTTL: s.cfg.ResultTTL, FileURL: s.fileURL,
		ArchiveURL: func(batchID string, exp time.Time) string {
			return s.cfg.Keyring.ArchiveURL(s.cfg.PublicURL, batchID, exp)
		}}
}

func (s *Server) fileURL(j *connector.Job, exp time.Time) string {
	if s.cfg.FileURL != nil {
		return s.cfg.FileURL(j, exp)
	}
	return s.cfg.Keyring.FileURL(s.cfg.PublicURL, j.ID, exp)
}

func mimeDisposition(filename string) string {
	if filename == "" {
		return "attachment"
	}
	return mime.FormatMediaType("attachment", map[string]string{"filename": filename})
}
