// Package chunkbuf holds a body of unknown length (an uploaded image, a
// fetched one, a decoded base64 field) in memory as a list of chunks rather
// than one growing slice.
//
// Why: a bytes.Buffer that grows to 10 MiB allocates 16 MiB in all steps
// of doubling, copies at each step, and leaves the outgrown buffers on the
// heap until the next garbage collection, so reading a 10 MiB image without
// a Content-Length costs two to three times its size. Chunks are never
// copied or outgrown: a Buffer costs the bytes it holds plus at most one
// partly filled chunk, and exactly the bytes when the size is known ahead
// (New's sizeHint, from a Content-Length). Readers stream the chunks as they
// are (Reader, WriteTo, ReadAt), so consumers that only stream — a blob
// store, a multipart upload, a hash — never need the bytes in one piece.
//
// A Buffer is written by one goroutine; once writing is done, any number of
// goroutines may read it at once.
package chunkbuf

import (
	"errors"
	"io"
)

const (
	// MaxChunk is the size of a chunk once a buffer has grown: the most a
	// buffer allocates and does not fill. Small enough to waste little
	// (2.5 % of a 10 MiB image), large enough that a 10 MiB image is 40
	// allocations.
	MaxChunk = 256 << 10
	// minChunk is the first chunk of a buffer that has no size hint:
	// small bodies stay small, and chunks double up to MaxChunk.
	minChunk = 4 << 10
)

// Buffer is bytes held in chunks. The zero value is an empty buffer
// without a size hint.
type Buffer struct {
	// chunks are filled front to back: every chunk but the last is full
	// (len == cap); the last may have room.
	chunks [][]byte
	size   int64
	hint   int64 // expected total size; 0 when unknown
}

// New returns an empty buffer that expects sizeHint bytes (0 or less: not
// known). The hint only sizes chunks so that they end exactly at it; the
// memory is allocated as bytes come, so a hint that lies costs nothing.
func New(sizeHint int64) *Buffer {
	return &Buffer{hint: max(sizeHint, 0)}
}

// Size is the number of bytes held.
func (b *Buffer) Size() int64 {
	if b == nil {
		return 0
	}
	return b.size
}

// room returns the free space of the last chunk, adding a chunk when the
// last one is full.
func (b *Buffer) room() []byte {
	if n := len(b.chunks); n > 0 {
		if last := b.chunks[n-1]; len(last) < cap(last) {
			return last[len(last):cap(last)]
		}
	}
	b.chunks = append(b.chunks, make([]byte, 0, b.nextChunk()))
	last := b.chunks[len(b.chunks)-1]
	return last[:cap(last)]
}

// nextChunk sizes the next chunk: up to the hint when one is left, else
// as large as what is held (doubling), between minChunk and MaxChunk.
func (b *Buffer) nextChunk() int {
	if left := b.hint - b.size; left > 0 {
		return int(min(left, MaxChunk))
	}
	return int(min(max(b.size, minChunk), MaxChunk))
}

// grew records n bytes written into the room of the last chunk.
func (b *Buffer) grew(n int) {
	last := &b.chunks[len(b.chunks)-1]
	*last = (*last)[:len(*last)+n]
	b.size += int64(n)
}

// Write appends p. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := copy(b.room(), p)
		b.grew(n)
		p = p[n:]
	}
	return total, nil
}

// ReadFrom appends what r gives until io.EOF, reading straight into the
// chunks. A reader that ends exactly at the size hint costs no chunk past
// it: the end is checked with a one-byte read first.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	start := b.size
	for {
		if b.hint > 0 && b.size >= b.hint && b.full() {
			var one [1]byte
			n, err := io.ReadAtLeast(r, one[:], 1)
			if n > 0 {
				b.Write(one[:n])
			}
			if err != nil {
				return b.size - start, eof(err)
			}
		}
		n, err := r.Read(b.room())
		if n < 0 {
			return b.size - start, errors.New("chunkbuf: reader returned a negative count")
		}
		b.grew(n)
		if err != nil {
			return b.size - start, eof(err)
		}
	}
}

// full reports whether the last chunk (if any) has no room.
func (b *Buffer) full() bool {
	n := len(b.chunks)
	return n == 0 || len(b.chunks[n-1]) == cap(b.chunks[n-1])
}

func eof(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}

// WriteTo writes the bytes to w, chunk by chunk.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	return b.Reader().(io.WriterTo).WriteTo(w)
}

// ReadAt reads len(p) bytes from off, as io.ReaderAt says.
func (b *Buffer) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("chunkbuf: negative offset")
	}
	if off >= b.Size() {
		return 0, io.EOF
	}
	n := 0
	for _, c := range b.chunks {
		if off >= int64(len(c)) {
			off -= int64(len(c))
			continue
		}
		n += copy(p[n:], c[off:])
		off = 0
		if n == len(p) {
			return n, nil
		}
	}
	return n, io.EOF
}

// Head returns the first n bytes (all of them when there are fewer),
// without a copy when the first chunk holds them: enough to sniff a type.
func (b *Buffer) Head(n int) []byte {
	n = int(min(int64(n), b.Size()))
	if n == 0 {
		return nil
	}
	if len(b.chunks[0]) >= n {
		return b.chunks[0][:n:n]
	}
	head := make([]byte, n)
	b.ReadAt(head, 0)
	return head
}

// Bytes returns the bytes in one new slice: a copy, for small buffers and
// tests. Streaming consumers use Reader or WriteTo.
func (b *Buffer) Bytes() []byte {
	out := make([]byte, 0, b.Size())
	if b != nil {
		for _, c := range b.chunks {
			out = append(out, c...)
		}
	}
	return out
}

// Reader returns a new reader of the bytes from the start; it implements
// io.WriterTo, so io.Copy hands the chunks on without a buffer of its own.
func (b *Buffer) Reader() io.Reader {
	return &reader{b: b}
}

// reader reads a Buffer front to back.
type reader struct {
	b   *Buffer
	i   int // chunk
	off int // in chunk i
}

func (r *reader) Read(p []byte) (int, error) {
	if r.b == nil {
		return 0, io.EOF
	}
	for r.i < len(r.b.chunks) && r.off == len(r.b.chunks[r.i]) {
		r.i, r.off = r.i+1, 0
	}
	if r.i == len(r.b.chunks) {
		return 0, io.EOF
	}
	n := copy(p, r.b.chunks[r.i][r.off:])
	r.off += n
	return n, nil
}

func (r *reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	if r.b == nil {
		return 0, nil
	}
	for ; r.i < len(r.b.chunks); r.i, r.off = r.i+1, 0 {
		c := r.b.chunks[r.i][r.off:]
		if len(c) == 0 {
			continue
		}
		n, err := w.Write(c)
		total += int64(n)
		if err != nil {
			r.off += n
			return total, err
		}
	}
	return total, nil
}
