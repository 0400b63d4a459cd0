package b64json

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// refDecoder is the decoder as it was before its fast path (commit 18a79c2),
// byte by byte, kept as the reference the fuzz targets hold the decoder to:
// same bytes, same errors, at the same writes. One change since: like the
// decoder, it takes text that starts with a d as a data: URI only while the
// text can still be "data:" (base64 such as "d3d3" was refused).
type refDecoder struct {
	urlSafe, dataURI bool
	max              int // decoded bytes allowed

	chunk   [4096]byte // pending characters, decoded when full
	decoded [3072]byte // chunk decoded, before it joins out
	n       int
	chars   int // characters decoded so far (for error offsets)
	pad     int
	std     bool // saw + or /
	url     bool // saw - or _
	// out holds the decoded bytes in chunks: it grows without copying
	// and leaves no outgrown buffer behind.
	out *chunkbuf.Buffer

	// data: URI prefix state: prefix collects "data:..." up to the comma.
	started   bool
	inPrefix  bool
	prefix    []byte
	mediaType string
}

func newRefDecoder(max, hint int, urlSafe, dataURI bool) *refDecoder {
	return &refDecoder{max: max, urlSafe: urlSafe, dataURI: dataURI, out: chunkbuf.New(int64(min(hint, max)))}
}

// write feeds base64 text.
func (d *refDecoder) write(p []byte) error {
	if !d.started && len(p) > 0 {
		d.started = true
		d.inPrefix = d.dataURI && (p[0] == 'd' || p[0] == 'D')
	}
	if d.inPrefix {
		i := 0
		for ; i < len(p) && p[i] != ','; i++ {
		}
		d.prefix = append(d.prefix, p[:i]...)
		if !maybeDataURI(d.prefix) {
			return d.replayPrefix(p[i:])
		}
		if len(d.prefix) > maxDataURIPrefix {
			return d.prefixError()
		}
		if i == len(p) {
			return nil
		}
		if err := d.parsePrefix(); err != nil {
			return err
		}
		d.inPrefix = false
		p = p[i+1:]
	}
	return d.body(p)
}

func (d *refDecoder) replayPrefix(rest []byte) error {
	d.inPrefix = false
	held := d.prefix
	d.prefix = nil
	if err := d.body(held); err != nil {
		return err
	}
	return d.body(rest)
}

func (d *refDecoder) body(p []byte) error {
	for _, c := range p {
		switch c {
		case '\n', '\r', ' ', '\t':
			continue
		case '=':
			d.pad++
			if d.pad > 2 {
				return d.invalid("too much padding")
			}
			continue
		case '-', '_':
			if !d.urlSafe {
				return d.invalid(fmt.Sprintf("illegal character %q", c))
			}
			d.url = true
			if c == '-' {
				c = '+'
			} else {
				c = '/'
			}
		case '+', '/':
			d.std = true
		}
		if d.pad > 0 {
			return d.invalid("data after the padding")
		}
		if d.std && d.url {
			return d.invalid("it mixes the standard and URL-safe alphabets")
		}
		d.chunk[d.n] = c
		d.n++
		if d.n == len(d.chunk) {
			if err := d.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush decodes the pending characters (a multiple of 4 except at the end).
func (d *refDecoder) flush() error {
	if d.n == 0 {
		return nil
	}
	if d.out.Size()+int64(base64.RawStdEncoding.DecodedLen(d.n)) > int64(d.max)+3 {
		return ErrTooLarge
	}
	n, err := base64.RawStdEncoding.Decode(d.decoded[:], d.chunk[:d.n])
	if err != nil {
		if ce, ok := err.(base64.CorruptInputError); ok {
			return d.invalid(fmt.Sprintf("illegal data at character %d", d.chars+int(ce)))
		}
		return d.invalid(err.Error())
	}
	d.out.Write(d.decoded[:n])
	d.chars += d.n
	d.n = 0
	if d.out.Size() > int64(d.max) {
		return ErrTooLarge
	}
	return nil
}

// finish decodes what is left and returns the bytes.
func (d *refDecoder) finish() (*chunkbuf.Buffer, error) {
	if d.inPrefix && len(d.prefix) < len("data:") {
		if err := d.replayPrefix(nil); err != nil {
			return nil, err
		}
	}
	if d.inPrefix {
		return nil, d.prefixError()
	}
	total := d.chars + d.n
	if d.pad > 0 && (total+d.pad)%4 != 0 {
		return nil, d.invalid("wrong padding")
	}
	if total%4 == 1 {
		return nil, d.invalid("it ends in the middle of a byte")
	}
	if err := d.flush(); err != nil {
		return nil, err
	}
	return d.out, nil
}

func (d *refDecoder) parsePrefix() error {
	// The scheme and the base64 marker in any case, as the decoder takes them.
	meta, ok := strings.CutPrefix(strings.ToLower(string(d.prefix)), "data:")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return d.prefixError()
	}
	mediaType, _, _ := strings.Cut(strings.TrimSuffix(meta, ";base64"), ";")
	d.mediaType = strings.TrimSpace(mediaType)
	return nil
}

func (d *refDecoder) prefixError() error {
	return &Error{Msg: "a data: URI must be base64-encoded (data:image/png;base64,...)"}
}

func (d *refDecoder) invalid(why string) error {
	return &Error{Msg: "is not valid base64: " + why}
}
