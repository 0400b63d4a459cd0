package server

import (
	"context"
	"reflect"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// jobMaker is a job store that takes the in-flight place, stores the input
// and creates the record in one round trip (redisstore.Store), used when it
// is the blob store and the in-flight limiter too.
type jobMaker interface {
	CreateJobWithInput(ctx context.Context, job *connector.Job, input connector.Bytes, inputTTL time.Duration, limit int) error
}

// storeJob takes the job's in-flight place (when keys are capped), stores
// its input and creates its record; on failure nothing of it stays. The
// input lives until the job ends; its TTL only guards against a job that
// never runs.
func (s *Server) storeJob(ctx context.Context, job *connector.Job, in *jobRequest) (err error) {
	capped := s.cfg.Inflight != nil && s.cfg.MaxJobsPerKey > 0
	var input connector.Bytes
	if in.image != nil {
		input = in.image
	}
	if mk, ok := s.cfg.Jobs.(jobMaker); ok && (input == nil || sameStore(s.cfg.Jobs, s.cfg.Blobs)) &&
		(!capped || sameStore(s.cfg.Jobs, s.cfg.Inflight)) {
		limit := 0
		if capped {
			limit = s.cfg.MaxJobsPerKey
		}
		return mk.CreateJobWithInput(ctx, job, input, s.cfg.ResultTTL, limit)
	}
	if capped {
		if err := s.cfg.Inflight.AdmitJob(ctx, job.Owner, job.ID, s.cfg.MaxJobsPerKey); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				if rerr := s.cfg.Inflight.ReleaseJob(context.WithoutCancel(ctx), job.Owner, job.ID); rerr != nil {
					s.log.Warn("in-flight place not released; it is pruned when its deadline passes", "job_id", job.ID, "err", rerr)
				}
			}
		}()
	}
	if input != nil {
		if err := s.cfg.Blobs.PutBlob(ctx, connector.InputBlobKey(job.ID), in.image.Reader(), in.image.Size(), s.cfg.ResultTTL); err != nil {
			return err
		}
	}
	return s.cfg.Jobs.CreateJob(ctx, job)
}

// sameStore reports whether two of the server's stores are one object (one
// Redis store), so that one may do the other's write in its round trip.
func sameStore(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}
