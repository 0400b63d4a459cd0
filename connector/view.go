package connector

import "time"

// View renders jobs and batches as their owner sees them: the one public
// view, used by the API's answers (server) and by webhook payloads
// (worker) alike, so that the two cannot drift. A webhook payload is the
// view as of the finish, without the delivery's own callback state, so
// that every attempt of a delivery sends the same body.
type View struct {
	// PublicURL is the server's public base URL, without a trailing slash.
	PublicURL string
	// ResultTTL is how long results live after a finish, and so how long
	// the signed links in a view stay valid.
	ResultTTL time.Duration
	// FileURL makes a job's signed file_url, valid until exp.
	FileURL func(j *Job, exp time.Time) string
	// ArchiveURL makes a batch's signed archive link, valid until exp.
	ArchiveURL func(batchID string, exp time.Time) string
}

// Job is the job as its owner reads it: with a signed file_url when it has
// a result, never the bytes (?include=data adds them to an API answer).
func (v View) Job(j *Job) *Job {
	view := *j
	if j.Result != nil {
		r := *j.Result
		r.CompressedData = ""
		r.FileURL = v.FileURL(j, j.finishedAt().Add(v.ResultTTL))
		view.Result = &r
	}
	return &view
}

// JobEvent is the body of a finished job's deliveries: its view as of the
// finish (updated_at is the finish: later writes are the callback's own
// state, which the body leaves out).
func (v View) JobEvent(j *Job) Event {
	finished := j.finishedAt()
	data := v.Job(j)
	data.Callback = nil
	data.UpdatedAt = finished
	return Event{Type: j.EventType(), Timestamp: finished, Data: data}
}

// Batch is the batch as its owner reads it, with its links; the archive's
// is signed, as a job's file_url is.
func (v View) Batch(b *Batch) *Batch {
	view := *b
	base := v.PublicURL + "/v1/batches/" + b.ID
	view.Links = &BatchLinks{Self: base, Jobs: base + "/jobs", Archive: v.ArchiveURL(b.ID, b.finishedAt().Add(v.ResultTTL))}
	return &view
}

// BatchEvent is the body of a batch.finished delivery: the batch's view
// without its callback's delivery state.
func (v View) BatchEvent(b *Batch) BatchEvent {
	data := v.Batch(b)
	data.Callback = nil
	return BatchEvent{Type: EventBatchFinished, Timestamp: b.finishedAt(), Data: data}
}

// finishedAt is when the job finished; its last write before that.
func (j *Job) finishedAt() time.Time {
	if j.FinishedAt != nil {
		return *j.FinishedAt
	}
	return j.UpdatedAt
}

// finishedAt is when the batch's last item ended; its creation before.
func (b *Batch) finishedAt() time.Time {
	if b.FinishedAt != nil {
		return *b.FinishedAt
	}
	return b.CreatedAt
}
