package chunkbuf

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

func randomBytes(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rand.IntN(256))
	}
	return p
}

// allocated is the memory the buffer's chunks hold, filled or not.
func allocated(b *Buffer) (n int64) {
	for _, c := range b.chunks {
		n += int64(cap(c))
	}
	return n
}

func TestBufferKeepsTheBytesWhateverTheHintAndReads(t *testing.T) {
	for _, size := range []int{0, 1, minChunk - 1, minChunk, 3*MaxChunk + 17, 10 << 20} {
		data := randomBytes(size)
		for _, hint := range []int64{0, int64(size), int64(size) / 2, int64(size) * 2} {
			for name, r := range map[string]io.Reader{
				"whole":    bytes.NewReader(data),
				"one byte": iotest.OneByteReader(bytes.NewReader(data)),
				"half":     iotest.HalfReader(bytes.NewReader(data)),
			} {
				if size > 1<<20 && name == "one byte" {
					continue
				}
				b := New(hint)
				n, err := b.ReadFrom(r)
				if err != nil || n != int64(size) || b.Size() != int64(size) {
					t.Fatalf("size %d hint %d %s: ReadFrom = %d, %v; Size %d", size, hint, name, n, err, b.Size())
				}
				if !bytes.Equal(b.Bytes(), data) {
					t.Fatalf("size %d hint %d %s: the bytes read back differ from those written", size, hint, name)
				}
				if err := iotest.TestReader(b.Reader(), data); err != nil {
					t.Fatalf("size %d hint %d %s: %v", size, hint, name, err)
				}
			}
		}
	}
}

func TestBufferAllocatesTheBytesPlusAtMostOneChunk(t *testing.T) {
	const size = 10<<20 + 12345
	data := randomBytes(size)
	exact := New(size)
	exact.ReadFrom(bytes.NewReader(data))
	if got := allocated(exact); got != size {
		t.Errorf("with the exact size hint: expected %d bytes allocated, got %d", size, got)
	}
	unknown := New(0)
	unknown.ReadFrom(iotest.HalfReader(bytes.NewReader(data)))
	if got := allocated(unknown); got < size || got >= size+MaxChunk {
		t.Errorf("without a hint: expected under %d bytes allocated, got %d", size+MaxChunk, got)
	}
	written := &Buffer{}
	for p := data; len(p) > 0; {
		n := min(len(p), 1000)
		written.Write(p[:n])
		p = p[n:]
	}
	if got := allocated(written); got >= size+MaxChunk || !bytes.Equal(written.Bytes(), data) {
		t.Errorf("small writes: expected the bytes in under %d bytes, got %d", size+MaxChunk, got)
	}
	small := New(0)
	small.Write([]byte("hello"))
	if got := allocated(small); got != minChunk {
		t.Errorf("a small body: expected one %d-byte chunk, got %d bytes", minChunk, got)
	}
}

func TestBufferReadAtAndHead(t *testing.T) {
	data := randomBytes(3*MaxChunk + 100)
	b := New(0)
	b.Write(data)
	for _, off := range []int{0, 1, minChunk - 1, minChunk, MaxChunk, len(data) - 10} {
		p := make([]byte, 20)
		n, err := b.ReadAt(p, int64(off))
		want := data[off:min(off+20, len(data))]
		if n != len(want) || !bytes.Equal(p[:n], want) {
			t.Errorf("ReadAt(%d): expected %d bytes of the data, got %d (%v)", off, len(want), n, err)
		}
		if n < len(p) && err != io.EOF {
			t.Errorf("ReadAt(%d) short: expected io.EOF, got %v", off, err)
		}
	}
	if n, err := b.ReadAt(make([]byte, 1), int64(len(data))); n != 0 || err != io.EOF {
		t.Errorf("ReadAt at the end: expected 0, io.EOF; got %d, %v", n, err)
	}
	if h := b.Head(64); !bytes.Equal(h, data[:64]) {
		t.Errorf("Head(64) is not the first 64 bytes")
	}
	if h := b.Head(2 * minChunk); !bytes.Equal(h, data[:2*minChunk]) {
		t.Errorf("Head across chunks is not the first bytes")
	}
	var nilBuf *Buffer
	if nilBuf.Size() != 0 || nilBuf.Head(10) != nil || len(nilBuf.Bytes()) != 0 {
		t.Errorf("a nil buffer should read as empty")
	}
}

type shortWriter struct{ left int }

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, io.ErrShortWrite
	}
	w.left -= len(p)
	return len(p), nil
}

func TestBufferWriteToHandsOnEveryChunkAndStopsAtAnError(t *testing.T) {
	data := randomBytes(2*MaxChunk + 5)
	b := New(0)
	b.Write(data)
	var out bytes.Buffer
	if n, err := b.WriteTo(&out); err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("WriteTo = %d, %v; expected the %d bytes", n, err, len(data))
	}
	if n, err := b.WriteTo(&shortWriter{left: 1000}); n != 1000 || !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("WriteTo into a failing writer = %d, %v; expected 1000, ErrShortWrite", n, err)
	}
}

func TestBufferReadFromReturnsTheReadersError(t *testing.T) {
	boom := errors.New("boom")
	b := New(0)
	n, err := b.ReadFrom(iotest.DataErrReader(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom))))
	if !errors.Is(err, boom) || n != 3 || string(b.Bytes()) != "abc" {
		t.Errorf("ReadFrom = %d, %v, %q; expected 3, boom, abc", n, err, b.Bytes())
	}
}
