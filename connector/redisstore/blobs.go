package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// blobChunk is the most of a blob the store holds in memory at once: blobs
// are written in appends and read in GETRANGEs of this size.
const blobChunk = 1 << 20

// partTTL bounds how long the part of a blob whose writer died survives
// when the blob itself has no expiry.
const partTTL = time.Hour

// Blobs keeps image bytes (connector.BlobStore): job inputs until their
// job ends, results for the result TTL. With blobs in S3 (package s3blob)
// it keeps the objects' deadlines instead (blobdeadlines.go). Jobs and
// Runs write a small blob in the same round trip as the job's record.
type Blobs struct {
	*conn

	sweepMu   sync.Mutex
	sweepFrom int64 // next unix minute Due looks at; 0 until the first sweep
}

var (
	_ connector.BlobStore  = (*Blobs)(nil)
	_ connector.BlobCopier = (*Blobs)(nil)
)

// Put stores the bytes read from r under key for ttl (see putBlob).
func (s *Blobs) Put(ctx context.Context, key string, r io.Reader, size int64, ttl time.Duration) error {
	return s.putBlob(ctx, key, r, size, ttl)
}

// putBlob stores the bytes read from r under key for ttl. A blob of up to
// blobChunk bytes is one SET. A larger one is appended chunk by chunk to a
// part key in the blob's slot, which one MULTI then renames over the blob,
// so readers never see half a blob and a writer that dies leaves a part
// that expires. Errors of r come back unchanged.
func (s *Blobs) putBlob(ctx context.Context, key string, r io.Reader, size int64, ttl time.Duration) error {
	first := blobChunk
	if size >= 0 && size < blobChunk {
		first = int(size)
	}
	buf := make([]byte, first)
	n, err := readChunk(r, buf)
	if err != nil {
		return err
	}
	final := s.keys.blob(key)
	if n < len(buf) || size == int64(n) {
		if err := wantSize(int64(n), size, r); err != nil {
			return err
		}
		return storageErr(s.bulk.Set(ctx, final, buf[:n], max(ttl, 0)).Err())
	}
	part := final + ":part:" + randomHex(6)
	partExpiry := ttl
	if ttl <= 0 {
		partExpiry = partTTL
	}
	err = s.appendParts(ctx, part, buf, n, r, size, partExpiry)
	if err == nil {
		_, err = s.bulk.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Rename(ctx, part, final)
			if ttl > 0 {
				p.PExpire(ctx, final, ttl) // counted from the end of the write
			} else {
				p.Persist(ctx, final)
			}
			return nil
		})
		err = storageErr(err)
	}
	if err != nil {
		s.bulk.Del(context.WithoutCancel(ctx), part)
	}
	return err
}

// appendParts writes buf[:n] and the rest of r to part.
func (s *Blobs) appendParts(ctx context.Context, part string, buf []byte, n int, r io.Reader, size int64, expiry time.Duration) error {
	if err := s.bulk.Set(ctx, part, buf[:n], expiry).Err(); err != nil {
		return storageErr(err)
	}
	total := int64(n)
	if cap(buf) < blobChunk {
		buf = make([]byte, blobChunk)
	}
	buf = buf[:blobChunk]
	for {
		n, err := readChunk(r, buf)
		if err != nil {
			return err
		}
		if n > 0 {
			// Do, not Append: Append takes a string, a copy of the chunk.
			if err := s.bulk.Do(ctx, "APPEND", part, buf[:n]).Err(); err != nil {
				return storageErr(err)
			}
			total += int64(n)
		}
		if size >= 0 && total > size {
			return wantSize(total, size, r)
		}
		if n < len(buf) {
			return wantSize(total, size, r)
		}
	}
}

// readChunk fills buf from r as far as r goes; n < len(buf) means r ended.
func readChunk(r io.Reader, buf []byte) (int, error) {
	n, err := io.ReadFull(r, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// wantSize checks that a reader which gave got bytes had size of them (-1:
// any) and nothing more.
func wantSize(got, size int64, r io.Reader) error {
	if size >= 0 && got == size {
		var one [1]byte
		if n, _ := io.ReadFull(r, one[:]); n > 0 {
			return internalErr(fmt.Errorf("put blob: reader has more than the %d bytes announced", size))
		}
	}
	if size >= 0 && got != size {
		return internalErr(fmt.Errorf("put blob: reader gave %d bytes, %d announced", got, size))
	}
	return nil
}

// Open returns the blob under key, or ENOTFOUND when it is gone. Its
// size and first chunk come in one round trip; each further chunk is one
// GETRANGE, read as the caller reads.
func (s *Blobs) Open(ctx context.Context, key string) (*connector.Blob, error) {
	return s.openBlob(ctx, key)
}

func (s *Blobs) openBlob(ctx context.Context, key string) (*connector.Blob, error) {
	var o blobOpening
	_, err := s.bulk.Pipelined(ctx, func(p redis.Pipeliner) error {
		o = s.queueOpenBlob(ctx, p, key, blobChunk)
		return nil
	})
	if err != nil {
		return nil, storageErr(err)
	}
	return o.blob(ctx, s.bulk, key)
}

// blobOpening is an Open's first round trip, queued in a pipeline:
// the size, the first chunk (or less: the first bytes) and whether the blob
// exists.
type blobOpening struct {
	key    string
	size   *redis.IntCmd
	first  *redis.StringCmd
	exists *redis.IntCmd
}

func (s *Blobs) queueOpenBlob(ctx context.Context, p redis.Pipeliner, key string, first int64) blobOpening {
	k := s.keys.blob(key)
	return blobOpening{key: k, size: p.StrLen(ctx, k), first: p.GetRange(ctx, k, 0, first-1), exists: p.Exists(ctx, k)}
}

// blob is the opened blob, ENOTFOUND when it did not exist.
func (o blobOpening) blob(ctx context.Context, rdb redis.UniversalClient, key string) (*connector.Blob, error) {
	if o.exists.Val() == 0 {
		return nil, notFound("blob", key)
	}
	buf, _ := o.first.Bytes()
	r := &rangeReader{ctx: ctx, rdb: rdb, key: o.key, size: o.size.Val(), buf: buf}
	r.off = int64(len(r.buf))
	return &connector.Blob{ReadCloser: r, Size: r.size}, nil
}

// openFirst opens a blob from its first bytes, read by a GETRANGE of
// want bytes from 0 queued beside other reads: fewer bytes than want are
// the whole blob, so a small one costs that one command (no STRLEN, no
// EXISTS); a full read asks its size in one more round trip. Nothing read
// (a missing or empty blob) is a nil blob.
func (s *Blobs) openFirst(ctx context.Context, key string, first *redis.StringCmd, want int64) (*connector.Blob, error) {
	buf, err := first.Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storageErr(err)
	}
	if len(buf) == 0 {
		return nil, nil
	}
	k := s.keys.blob(key)
	size := int64(len(buf))
	if size >= want {
		if size, err = s.bulk.StrLen(ctx, k).Result(); err != nil {
			return nil, storageErr(err)
		}
		if size < int64(len(buf)) {
			// Rewritten shorter between the reads: the caller's own read.
			return nil, nil
		}
	}
	r := &rangeReader{ctx: ctx, rdb: s.bulk, key: k, size: size, buf: buf, off: int64(len(buf))}
	return &connector.Blob{ReadCloser: r, Size: size}, nil
}

// rangeReader reads a Redis string in blobChunk ranges.
type rangeReader struct {
	ctx  context.Context
	rdb  redis.UniversalClient
	key  string
	size int64
	off  int64  // where the next GETRANGE starts
	buf  []byte // read but not yet returned
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if r.off >= r.size {
			return 0, io.EOF
		}
		chunk, err := r.rdb.GetRange(r.ctx, r.key, r.off, r.off+blobChunk-1).Bytes()
		if err != nil {
			return 0, storageErr(err)
		}
		if len(chunk) == 0 {
			// Deleted or expired while being read.
			return 0, connector.Errorf(connector.ENOTFOUND, "blob expired while it was read")
		}
		r.buf, r.off = chunk, r.off+int64(len(chunk))
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *rangeReader) Close() error { r.buf = nil; r.off = r.size; return nil }

// Delete removes the bytes under key; a missing blob is not an error.
func (s *Blobs) Delete(ctx context.Context, key string) error {
	return storageErr(s.bulk.Del(ctx, s.keys.blob(key)).Err())
}

// Copy copies a blob inside Redis (COPY: the bytes never leave it). On
// a cluster the two blobs live in other slots (each job's own), so the copy
// streams through imgflow instead, a chunk at a time.
func (s *Blobs) Copy(ctx context.Context, from, to string, ttl time.Duration) error {
	if s.onCluster() {
		b, err := s.Open(ctx, from)
		if err != nil {
			return err
		}
		defer b.Close()
		return s.putBlob(ctx, to, b, b.Size, ttl)
	}
	dst := s.keys.blob(to)
	var copied *redis.Cmd
	_, err := s.bulk.TxPipelined(ctx, func(p redis.Pipeliner) error {
		// COPY without DB: into the client's own database (go-redis's
		// Copy always names one, and 0 is not the store's under a
		// redis://…/12 URL).
		copied = p.Do(ctx, "COPY", s.keys.blob(from), dst, "REPLACE")
		if ttl > 0 {
			p.PExpire(ctx, dst, ttl)
		} else {
			p.Persist(ctx, dst)
		}
		return nil
	})
	if err != nil {
		return storageErr(err)
	}
	if n, _ := copied.Int(); n == 0 {
		return connector.Errorf(connector.ENOTFOUND, "blob %s not found", from)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// smallBlobBytes returns the bytes of b (at most one blob chunk) in one
// slice, for a SET in a pipeline: b's own memory when it holds them in one
// piece, as a decoded upload or answer of that size does (chunkbuf's Head),
// else a copy. The slice is only read.
func smallBlobBytes(b connector.Bytes) ([]byte, error) {
	size := int(b.Size())
	if size == 0 {
		return []byte{}, nil // a SET of nothing, not a SET left out
	}
	if h, ok := b.(interface{ Head(int) []byte }); ok {
		if p := h.Head(size); len(p) == size {
			return p, nil
		}
	}
	buf := make([]byte, size)
	if n, err := b.ReadAt(buf, 0); n < size {
		return nil, fmt.Errorf("read %d of %d bytes: %w", n, size, err)
	}
	return buf, nil
}
