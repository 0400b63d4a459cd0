package connector

import (
	"io"
	"sync"
)

// Bytes is an image held in memory: ReadAt reads any part of it, as often
// as needed and from several goroutines at once, and Size is its length.
// *bytes.Reader is one. The fetcher and the compression API's client return
// internal/chunkbuf buffers, which hold a body whose length was not known
// ahead in fixed chunks instead of one slice grown by doubling (which would
// cost 2–3 × the image until the next garbage collection).
type Bytes interface {
	io.ReaderAt
	Size() int64
}

// BytesReader reads b from its start; each call gives an independent reader.
func BytesReader(b Bytes) io.Reader { return io.NewSectionReader(b, 0, b.Size()) }

// sniffBuffers saves SniffBytes a 4 KiB allocation per call (b.ReadAt,
// an interface call, would move a local array to the heap).
var sniffBuffers = sync.Pool{New: func() any { return new([SniffLen]byte) }}

// SniffLen is as many leading bytes as SniffImageType ever needs: it covers
// an AVIF ftyp box with a long list of compatible brands.
const SniffLen = 4 << 10

// SniffBytes is SniffInputType for an image held as Bytes: the accepted
// types and HEIC/HEIF, which a job converts before compressing.
func SniffBytes(b Bytes) string {
	head := sniffBuffers.Get().(*[SniffLen]byte) // called on every result
	defer sniffBuffers.Put(head)
	n, _ := b.ReadAt(head[:min(b.Size(), SniffLen)], 0)
	return SniffInputType(head[:n])
}
