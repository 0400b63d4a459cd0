package server

import (
	"mime"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// render is the job as a caller sees it: with a signed file_url that works
// without the key until the result expires.
func (s *Server) render(j *connector.Job) *connector.Job {
	view := *j
	if j.Result != nil {
		r := *j.Result
		finished := j.UpdatedAt
		if j.FinishedAt != nil {
			finished = *j.FinishedAt
		}
		r.FileURL = s.fileURL(j, finished.Add(s.cfg.ResultTTL))
		view.Result = &r
	}
	return &view
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
