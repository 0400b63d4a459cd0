package redisstore

import (
	"context"
	"errors"
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// getJobWithInput is Get and Open of the job's input
// (connector.InputBlobKey) in one round trip: both keys are in the job's
// slot. The worker reads both to start a job: two commands, the record and
// the input's first bytes (openFirst). input is nil when there is no blob,
// or an empty one (the caller's own read says why); the caller closes it
// otherwise.
func (s *Jobs) getJobWithInput(ctx context.Context, id string) (*connector.Job, *connector.Blob, error) {
	var rec *redis.StringCmd
	var first *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.Get(ctx, s.keys.job(id))
		// The first bytes only: this read goes through the autopipeliner.
		first = p.GetRange(ctx, s.keys.blob(connector.InputBlobKey(id)), 0, smallValue-1)
		return nil
	})
	data, rerr := rec.Bytes()
	if errors.Is(rerr, redis.Nil) {
		// Unknown or expired: Get says which error.
		job, err := s.Get(ctx, id)
		return job, nil, err
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, storageErr(err)
	}
	job, err := decodeJob(data)
	if err != nil {
		return nil, nil, err
	}
	s.records.put(id, data, job.Status.Finished())
	input, err := s.blobs.openFirst(ctx, connector.InputBlobKey(id), first, smallValue)
	if err != nil || input == nil {
		return job, nil, nil // no input blob: the caller's own read says why
	}
	return job, input, nil
}

// openInput opens job id's input as getJobWithInput does, alone: nil when
// there is no blob.
func (s *Jobs) openInput(ctx context.Context, id string) (*connector.Blob, error) {
	first := s.rdb.GetRange(ctx, s.keys.blob(connector.InputBlobKey(id)), 0, smallValue-1)
	input, err := s.blobs.openFirst(ctx, connector.InputBlobKey(id), first, smallValue)
	if err != nil {
		return nil, nil // no input blob: the caller's own read says why
	}
	return input, nil
}

// RecordKeyAround is what a job's record key is around its id (prefix +
// id + suffix), for a dispatch that reads the records of the jobs it hands
// out (worker.Config.RecordKeyPrefix); ok is false on a Redis Cluster,
// where a record is in its job's own hash slot, not the queue's.
func (s *Jobs) RecordKeyAround() (prefix, suffix string, ok bool) {
	if s.onCluster() {
		return "", "", false
	}
	prefix, suffix, _ = strings.Cut(s.keys.job("\x00"), "\x00")
	return prefix, suffix, true
}
