package system

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"os"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/s3blob"
)

// sweepInterval is how often a work process deletes expired S3 blobs.
const sweepInterval = 30 * time.Second

// s3Config reads IMGFLOW_BLOB_STORE's s3:// form and the standard AWS
// credential variables; nil for "redis".
func (o *Options) s3Config() (*s3blob.Config, error) {
	if o.BlobStore == "" || o.BlobStore == "redis" {
		return nil, nil
	}
	c, err := s3blob.ParseURL(o.BlobStore)
	if err != nil {
		// The parser quotes the URL, which may carry credentials.
		return nil, scrubError(fmt.Errorf("IMGFLOW_BLOB_STORE (--blob-store) must be redis or s3://BUCKET?endpoint=URL&region=R&path_style=true: %v", err), o.BlobStore)
	}
	c.AccessKey, c.SecretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if c.AccessKey == "" || c.SecretKey == "" {
		return nil, fmt.Errorf("IMGFLOW_BLOB_STORE is S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required")
	}
	return &c, nil
}

// openBlobs makes the blob store IMGFLOW_BLOB_STORE names. With S3, blobs
// that were written to Redis before the switch stay readable there until
// they expire (afterRedis), so jobs in flight and file links of the last
// day survive the move.
func (a *App) openBlobs() error {
	c, err := a.opts.s3Config()
	if err != nil || c == nil {
		a.blobs = a.store.Blobs
		return err
	}
	s3, err := s3blob.New(*c, a.store.Blobs)
	if err != nil {
		return err
	}
	a.s3 = s3
	a.blobs = afterRedis{s3: s3, redis: a.store.Blobs}
	return nil
}

// runs is the worker's executor store: on Redis, with blobs fused into its
// steps, or delegating the blob halves to S3.
func (a *App) runs() *redisstore.Runs {
	if a.s3 != nil {
		return a.store.Runs.WithBlobs(a.blobs)
	}
	return a.store.Runs
}

// StartBlobSweeper deletes expired S3 blobs every sweepInterval until ctx
// ends; work and dev run it. Nothing to do with Redis blobs (their TTLs).
func (a *App) StartBlobSweeper(ctx context.Context, log *slog.Logger) {
	if a.s3 != nil {
		go a.s3.RunSweeper(ctx, sweepInterval, log)
	}
}

// fileURL is the file_url of a finished job: imgflow's own signed link, or
// with IMGFLOW_PRESIGN a presigned URL of the S3 object (falling back to
// the own link if presigning fails).
func (a *App) fileURL(j *connector.Job, exp time.Time) string {
	if a.opts.Presign && a.s3 != nil && j.Result != nil {
		disp := "attachment"
		if j.Result.Filename != "" {
			disp = mime.FormatMediaType("attachment", map[string]string{"filename": j.Result.Filename})
		}
		u, err := a.s3.PresignedURL(context.Background(), connector.OutputBlobKey(j.ID), j.Result.MIMEType, disp, exp)
		if err == nil {
			return u
		}
		slog.Warn("presigning the result failed; giving imgflow's own link", "job_id", j.ID, "err", err)
	}
	return a.keys.FileURL(a.opts.PublicURL, j.ID, exp)
}

// afterRedis is the S3 store, reading a blob that S3 does not have from
// Redis, where it may have been written before the switch.
type afterRedis struct {
	s3    *s3blob.Store
	redis *redisstore.Blobs
}

func (b afterRedis) Put(ctx context.Context, key string, r io.Reader, size int64, ttl time.Duration) error {
	return b.s3.Put(ctx, key, r, size, ttl)
}

func (b afterRedis) Open(ctx context.Context, key string) (*connector.Blob, error) {
	blob, err := b.s3.Open(ctx, key)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		if old, rerr := b.redis.Open(ctx, key); rerr == nil {
			return old, nil
		}
	}
	return blob, err
}

func (b afterRedis) Delete(ctx context.Context, key string) error {
	if err := b.s3.Delete(ctx, key); err != nil {
		return err
	}
	return b.redis.Delete(ctx, key)
}
