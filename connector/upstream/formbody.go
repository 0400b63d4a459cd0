package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"sync"
)

// formBody is the multipart body of a /compress call: the api_key field and
// the file part's header (head), the image streamed as the transport reads
// it, and the closing boundary (tail). Built around the image rather than
// through a pipe, its length is known up front when the image's is, so the
// request carries a Content-Length instead of a chunk per part, and the
// transport's buffer sends a small image with its headers in one write.
type formBody struct {
	mu      sync.Mutex
	r       io.Reader
	stopped bool
	size    int64 // -1: unknown (the image did not tell its size)
	// inMemory: r is a *bytes.Reader of the whole body (see inMemoryBody).
	inMemory bool
	// image counts a streamed image of known size (nil otherwise).
	image *sizedImage
}

// inMemoryBody is the largest body assembled in memory before it is sent,
// so that it leaves in one write with its headers (the transport's write
// buffer is as large). A larger image streams.
const inMemoryBody = writeBufferSize - 1024

// newFormBody returns the body for image (of imageSize bytes, -1 when
// unknown) and its Content-Type.
func newFormBody(apiKey, filename, contentType string, image io.Reader, imageSize int64) (*formBody, string, error) {
	var buf bytes.Buffer
	form := multipart.NewWriter(&buf)
	if err := form.WriteField("api_key", apiKey); err != nil {
		return nil, "", err
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(filename)))
	h.Set("Content-Type", contentType)
	if _, err := form.CreatePart(h); err != nil {
		return nil, "", err
	}
	head := bytes.Clone(buf.Bytes())
	buf.Reset()
	if err := form.Close(); err != nil {
		return nil, "", err
	}
	tail := buf.Bytes()
	size := int64(-1)
	if imageSize >= 0 {
		size = int64(len(head)) + imageSize + int64(len(tail))
	}
	if size >= 0 && size <= inMemoryBody {
		// net/http sends a body it knows to be in memory through its
		// write buffer, with the headers; any other body it streams, a
		// write per Read (here: head, image chunks, tail).
		whole := make([]byte, size)
		n := copy(whole, head)
		if _, err := io.ReadFull(image, whole[n:n+int(imageSize)]); err != nil {
			return nil, "", fmt.Errorf("reading the image: %w", err)
		}
		// A longer image must not go as a whole form of its first bytes.
		if extra, _ := image.Read(make([]byte, 1)); extra > 0 {
			return nil, "", fmt.Errorf("the image is longer than the %d bytes it said", imageSize)
		}
		copy(whole[n+int(imageSize):], tail)
		return &formBody{r: bytes.NewReader(whole), size: size, inMemory: true}, form.FormDataContentType(), nil
	}
	b := &formBody{size: size}
	if imageSize >= 0 {
		b.image = &sizedImage{r: image, left: imageSize}
		image = b.image
	}
	b.r = io.MultiReader(bytes.NewReader(head), image, bytes.NewReader(tail))
	return b, form.FormDataContentType(), nil
}

// errImageLonger: the image gave more bytes than its size said.
var errImageLonger = errors.New("the image is longer than the size it said")

// sizedImage streams an image of known size and fails at its first byte
// beyond that size, before the closing boundary: the API then never gets
// a whole form, and Compress fails even when an answer came first (the
// transport may return an answer that beat its own write error).
type sizedImage struct {
	r      io.Reader
	left   int64
	longer bool
}

func (s *sizedImage) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if int64(n) > s.left {
		s.longer = true
		n = int(s.left)
		s.left = 0
		return n, errImageLonger
	}
	s.left -= int64(n)
	return n, err
}

// lied says whether the streamed image turned out longer than it said.
// Called once the request is over (Read is not running).
func (b *formBody) lied() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.image != nil && b.image.longer
}

// reader is what the request sends: the whole body in memory as net/http
// recognises it, or the streaming body itself.
func (b *formBody) reader() io.Reader {
	if b.inMemory {
		return b.r
	}
	return b
}

// Read reads the body; after stop it reads nothing more.
func (b *formBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return 0, io.ErrClosedPipe
	}
	return b.r.Read(p)
}

// stop waits for a Read in progress and makes every later one fail, so the
// image is not read after Compress returns, whatever the transport still
// does with the body.
func (b *formBody) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
}

// sizer is an image that tells its size.
type sizer interface{ Size() int64 }

// sizeOf is the size of image, read from its start, or -1 when it does
// not tell.
func sizeOf(image io.Reader) int64 {
	s, ok := image.(sizer)
	if !ok {
		return -1
	}
	return s.Size()
}
