// Package s3blob keeps imgflow's image blobs (job inputs and results) in
// S3-compatible object storage: AWS S3, MinIO, versitygw, Ceph, R2 and the
// like, through minio-go. Bytes stream both ways; nothing of an image stays
// in Redis. Object storage has no per-object TTL, so every put records the
// object's deadline in a Deadlines index (Redis, see redisstore) and a
// sweeper deletes objects whose deadline has passed; see Sweep.
//
// Objects are named <prefix><kind>-<job id> (imgflow-in-…, imgflow-out-…
// by default), flat at the top of the bucket: filesystem-backed servers
// (versitygw's posix backend) remove a folder once it is empty, and a put
// into that folder at the same moment fails. The bucket must exist.
//
// Tests: go test ./connector/s3blob runs the BlobStore contract against a
// real S3 server started on loopback (versitygw, see internal/s3test).
package s3blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says where the bucket is and how to reach it.
type Config struct {
	Bucket    string
	Endpoint  string // http(s)://host:port; "" means AWS S3 (https://s3.amazonaws.com)
	Region    string // default us-east-1
	PathStyle bool   // http://host/bucket/key instead of http://bucket.host/key (MinIO, versitygw)
	AccessKey string // AWS_ACCESS_KEY_ID
	SecretKey string // AWS_SECRET_ACCESS_KEY
	Prefix    string // starts every object name; default "imgflow-"
}

// ParseURL reads IMGFLOW_BLOB_STORE's S3 form,
// s3://BUCKET?endpoint=URL&region=R&path_style=true; credentials are not in
// the URL (they come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), an
// optional path after the bucket becomes the object prefix.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, err
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("want s3://BUCKET?endpoint=URL&region=R&path_style=true, got %q", raw)
	}
	if u.User != nil {
		return Config{}, errors.New("credentials do not belong in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	q := u.Query()
	c := Config{Bucket: u.Host, Endpoint: q.Get("endpoint"), Region: q.Get("region")}
	if p := strings.Trim(u.Path, "/"); p != "" {
		c.Prefix = p + "/"
	}
	if v := q.Get("path_style"); v != "" {
		if c.PathStyle, err = strconv.ParseBool(v); err != nil {
			return Config{}, fmt.Errorf("path_style=%q is not true or false", v)
		}
	}
	if c.Endpoint != "" {
		e, err := url.Parse(c.Endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return Config{}, fmt.Errorf("endpoint=%q must be an http(s) URL such as http://127.0.0.1:7070", c.Endpoint)
		}
	}
	for k := range q {
		if k != "endpoint" && k != "region" && k != "path_style" {
			return Config{}, fmt.Errorf("unknown setting %q (known: endpoint, region, path_style)", k)
		}
	}
	return c, nil
}

// Deadlines remembers when each object must be deleted; redisstore keeps it.
type Deadlines interface {
	// AddDeadline records that object name is due at.
	AddDeadline(ctx context.Context, name string, at time.Time) error
	// Due removes and returns up to max names due before now.
	Due(ctx context.Context, now time.Time, max int) ([]string, error)
}

// Store is a connector.BlobStore over one bucket. Safe for concurrent use.
type Store struct {
	mc        *minio.Client
	bucket    string
	prefix    string
	deadlines Deadlines
	now       func() time.Time
}

var _ connector.BlobStore = (*Store)(nil)

// New returns a Store. It does not contact the server; see Ping.
func New(c Config, deadlines Deadlines) (*Store, error) {
	if c.Bucket == "" {
		return nil, errors.New("s3blob: no bucket")
	}
	if deadlines == nil {
		return nil, errors.New("s3blob: no deadline index: blobs would never expire")
	}
	host, secure := "s3.amazonaws.com", true
	if c.Endpoint != "" {
		e, err := url.Parse(c.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("s3blob: endpoint: %w", err)
		}
		host, secure = e.Host, e.Scheme == "https"
	}
	if c.Region == "" {
		c.Region = "us-east-1" // and no bucket-location request before presigning
	}
	lookup := minio.BucketLookupDNS
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	mc, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure:       secure,
		Region:       c.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("s3blob: %w", err)
	}
	if c.Prefix == "" {
		c.Prefix = "imgflow-"
	}
	return &Store{mc: mc, bucket: c.Bucket, prefix: c.Prefix, deadlines: deadlines, now: time.Now}, nil
}

// objectName maps a blob key ("in:<id>") to its object ("imgflow-in-<id>").
func (s *Store) objectName(key string) string {
	return s.prefix + strings.ReplaceAll(key, ":", "-")
}

// Ping checks that the bucket is there and the credentials open it, as
// EUNAVAILABLE when not; /ready uses it.
func (s *Store) Ping(ctx context.Context) error {
	ok, err := s.mc.BucketExists(ctx, s.bucket)
	if err == nil && !ok {
		err = fmt.Errorf("bucket %s does not exist", s.bucket)
	}
	return unavailable(err)
}

// Put streams r to the object (one PUT when the size is known; 5 MiB
// parts when it is not) and records its deadline first, so a crash between
// the two leaves at worst a deadline without an object, never an object
// that is never swept.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, ttl time.Duration) error {
	name := s.objectName(key)
	if ttl > 0 {
		if err := s.deadlines.AddDeadline(ctx, name, s.now().Add(ttl)); err != nil {
			return err
		}
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if size < 0 {
		opts.PartSize = 5 << 20 // the S3 minimum: the most buffered per upload
	}
	er := &exactReader{r: r, left: size}
	_, err := s.mc.PutObject(ctx, s.bucket, name, er, size, opts)
	if er.err != nil {
		return er.err // the reader's own failure, or a size mismatch
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Open starts the GET of the object; the body streams as it is read.
func (s *Store) Open(ctx context.Context, key string) (*connector.Blob, error) {
	obj, err := s.mc.GetObject(ctx, s.bucket, s.objectName(key), minio.GetObjectOptions{})
	if err != nil {
		return nil, unavailable(err)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		if isNotFound(err) {
			return nil, connector.Errorf(connector.ENOTFOUND, "blob %s not found", key)
		}
		return nil, unavailable(err)
	}
	return &connector.Blob{ReadCloser: obj, Size: info.Size}, nil
}

// Delete removes the object; S3 deletes are idempotent. Its deadline
// stays in the index and is dropped by the sweeper.
func (s *Store) Delete(ctx context.Context, key string) error {
	return unavailable(s.mc.RemoveObject(ctx, s.bucket, s.objectName(key), minio.RemoveObjectOptions{}))
}

// PresignedURL is a GET URL of the blob that works without credentials
// until exp (at most 7 days, S3's limit), answering with contentType and
// the given Content-Disposition.
func (s *Store) PresignedURL(ctx context.Context, key, contentType, disposition string, exp time.Time) (string, error) {
	d := min(exp.Sub(s.now()), 7*24*time.Hour)
	if d < time.Second {
		return "", errors.New("s3blob: link already expired")
	}
	q := url.Values{}
	if contentType != "" {
		q.Set("response-content-type", contentType)
	}
	if disposition != "" {
		q.Set("response-content-disposition", disposition)
	}
	u, err := s.mc.PresignedGetObject(ctx, s.bucket, s.objectName(key), d.Truncate(time.Second), q)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

func isNotFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound"
}

// unavailable maps a storage failure to EUNAVAILABLE (503 with Retry-After,
// and a retry in the worker). Context ends pass through.
func unavailable(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce *connector.Error
	if errors.As(err, &ce) {
		return err
	}
	return &connector.Error{Code: connector.EUNAVAILABLE, Message: "blob storage unavailable", RetryAfter: 5 * time.Second, Retryable: true, Err: fmt.Errorf("s3blob: %w", err)}
}

// exactReader passes r through and fails the upload (keeping the reason in
// err) when r fails or gives other than size bytes (size -1: any number).
// The check happens before the last byte goes out, so a wrong size never
// completes a PUT.
type exactReader struct {
	r    io.Reader
	left int64 // bytes still expected; -1 when unknown
	err  error
}

var errSize = connector.Errorf(connector.EINTERNAL, "blob reader size mismatch")

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.left < 0 {
		n, err := e.r.Read(p)
		if err != nil && err != io.EOF {
			e.err = err
		}
		return n, err
	}
	if e.left == 0 {
		e.checkEnd()
		if e.err != nil {
			return 0, e.err
		}
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	switch {
	case err != nil && err != io.EOF:
		e.err = err
	case e.left > 0 && err == io.EOF:
		e.err = fmt.Errorf("%w: reader ended %d bytes short", errSize, e.left)
	case e.left == 0:
		e.checkEnd()
	}
	if e.err != nil {
		return 0, e.err
	}
	if e.left == 0 {
		return n, io.EOF
	}
	return n, nil
}

// checkEnd fails the read when r has a byte beyond the announced size.
func (e *exactReader) checkEnd() {
	var one [1]byte
	if m, _ := io.ReadFull(e.r, one[:]); m > 0 {
		e.err = fmt.Errorf("%w: reader has more than announced", errSize)
	}
}

// Sweep deletes every object whose deadline has passed and says how many
// names it handled. Names whose delete failed go back into the index for
// the next minute, so an outage of the object store delays deletes rather
// than forgetting them.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	const batch = 1000 // S3's DeleteObjects limit
	total := 0
	for {
		names, err := s.deadlines.Due(ctx, s.now(), batch)
		if len(names) > 0 {
			if derr := s.removeAll(ctx, names); derr != nil {
				for _, n := range names {
					s.deadlines.AddDeadline(context.WithoutCancel(ctx), n, s.now().Add(time.Minute))
				}
				return total, derr
			}
			total += len(names)
		}
		if err != nil || len(names) < batch {
			return total, err
		}
	}
}

func (s *Store) removeAll(ctx context.Context, names []string) error {
	ch := make(chan minio.ObjectInfo, len(names))
	for _, n := range names {
		ch <- minio.ObjectInfo{Key: n}
	}
	close(ch)
	for e := range s.mc.RemoveObjects(ctx, s.bucket, ch, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && !isNotFound(e.Err) {
			return unavailable(e.Err)
		}
	}
	return nil
}

// RunSweeper calls Sweep every interval until ctx ends; every work
// process runs one (they share the index safely). Failures are logged and
// retried at the next tick.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := s.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("blob sweep failed; retrying at the next tick", "err", err)
		} else if n > 0 {
			log.Debug("expired blobs deleted", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
