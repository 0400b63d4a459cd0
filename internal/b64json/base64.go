package b64json

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// decoder turns base64 text, written in pieces, into bytes as it comes:
// standard or (when urlSafe) URL-safe alphabet, with or without padding,
// line breaks and spaces ignored, optionally behind a data: URI prefix.
type decoder struct {
	urlSafe, dataURI bool
	max              int // decoded bytes allowed

	*scratch // pooled; given back by release
	n        int
	chars    int // characters decoded so far (for error offsets)
	pad      int
	std      bool // saw + or /
	url      bool // saw - or _
	// out holds the decoded bytes in chunks: it grows without copying
	// and leaves no outgrown buffer behind.
	out *chunkbuf.Buffer
	// digest, when set, is written every decoded piece as it joins out:
	// the bytes are hashed while they stream, not read again.
	digest io.Writer

	// data: URI prefix state: prefix collects "data:..." up to the comma.
	started   bool
	inPrefix  bool
	prefix    []byte
	mediaType string
}

// scratch is a decoder's working space. It is pooled, not part of the
// decoder: 7 KiB in a decoder on the stack made every call grow its
// goroutine's stack (a copy of it), and a new one zeroed 7 KiB per call.
type scratch struct {
	chunk   [4096]byte // pending characters (as sent), decoded when full
	decoded [3072]byte // chunk decoded, before it joins out
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

const maxDataURIPrefix = 256

// newDecoder returns a decoder; release it when done with it.
func newDecoder(max, hint int, urlSafe, dataURI bool) *decoder {
	return &decoder{max: max, urlSafe: urlSafe, dataURI: dataURI, out: chunkbuf.New(int64(min(hint, max))),
		scratch: scratches.Get().(*scratch)}
}

// release gives the decoder's scratch back; the decoder is not used after.
func (d *decoder) release() {
	scratches.Put(d.scratch)
	d.scratch = nil
}

// write feeds base64 text.
func (d *decoder) write(p []byte) error {
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
			// Base64 that starts with a d ("d3d3" is "www"): not a prefix.
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

// maybeDataURI reports whether text held so far is, or may yet become,
// the start of a data: URI.
func maybeDataURI(held []byte) bool {
	const scheme = "data:"
	if len(held) < len(scheme) {
		return strings.HasPrefix(scheme, strings.ToLower(string(held)))
	}
	return strings.EqualFold(string(held[:len(scheme)]), scheme)
}

// replayPrefix decodes the text held as a possible prefix, and then rest,
// as base64.
func (d *decoder) replayPrefix(rest []byte) error {
	d.inPrefix = false
	held := d.prefix
	d.prefix = nil
	if err := d.body(held); err != nil {
		return err
	}
	return d.body(rest)
}

// body decodes base64 text (after any data: URI prefix).
func (d *decoder) body(p []byte) error {
	for len(p) > 0 {
		if d.pad == 0 {
			n, err := d.plain(p)
			if err != nil {
				return err
			}
			if p = p[n:]; len(p) == 0 {
				break
			}
		}
		if err := d.char(p[0]); err != nil {
			return err
		}
		p = p[1:]
	}
	return nil
}

// char takes one character the fast path (plain) leaves: white space,
// padding, the other alphabet's characters, anything invalid, and every
// character after the padding. The chunk keeps characters as they came;
// flush decodes it in the alphabet in use.
func (d *decoder) char(c byte) error {
	switch c {
	case '\n', '\r', ' ', '\t':
		return nil
	case '=':
		d.pad++
		if d.pad > 2 {
			return d.invalid("too much padding")
		}
		return nil
	case '-', '_':
		if !d.urlSafe {
			return d.invalid(fmt.Sprintf("illegal character %q", c))
		}
		d.url = true
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
		return d.flush()
	}
	return nil
}

// Plain characters are those char would only append to the chunk (before
// any padding): letters and digits, and + and / (- and _ once the text has
// shown it is URL-safe). A chunk of them can only decode without error.
var plainStd, plainURL = plainTable("+/"), plainTable("-_")

func plainTable(extra string) *[256]uint8 {
	var t [256]uint8
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" + extra {
		t[c] = 1
	}
	return &t
}

// run is the length of the plain characters that start s.
func run(s []byte, t *[256]uint8) int {
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		w := s[i : i+8 : i+8]
		if t[w[0]]&t[w[1]]&t[w[2]]&t[w[3]]&t[w[4]]&t[w[5]]&t[w[6]]&t[w[7]] == 0 {
			break
		}
	}
	for ; i < len(s) && t[s[i]] != 0; i++ {
	}
	return i
}

// encoding is the alphabet the chunk is decoded in: URL-safe once a - or _
// came (a + or / with it is an error), else standard. Characters of neither
// are invalid in both, at the same offset.
func (d *decoder) encoding() (*base64.Encoding, *[256]uint8) {
	if d.url {
		return base64.RawURLEncoding, plainURL
	}
	return base64.RawStdEncoding, plainStd
}

// plain takes the plain characters that start p (the caller checked that no
// padding came yet) and returns how many it took. It is the byte-by-byte
// path's outcome, in bulk: a chunk's worth that is all plain is decoded at
// once, straight from p when the chunk is empty; a shorter run is copied
// into the chunk. Chunks end at the same characters either way, so the
// size checks (and the errors) come at the same points.
func (d *decoder) plain(p []byte) (int, error) {
	enc, table := d.encoding()
	done := 0
	for {
		need := len(d.chunk) - d.n
		if len(p)-done >= need {
			src := p[done : done+need]
			// Decode skips \r and \n (then it decodes fewer bytes): skip
			// the attempt when they come, instead of decoding in vain.
			if bytes.IndexByte(src, '\n') < 0 && bytes.IndexByte(src, '\r') < 0 {
				whole := src
				if d.n > 0 {
					copy(d.chunk[d.n:], src)
					whole = d.chunk[:]
				}
				// All of it decodes, to all of decoded, only when every
				// character is of the alphabet: plain.
				if n, err := enc.Decode(d.decoded[:], whole); err == nil && n == len(d.decoded) {
					d.sawStd(src)
					done += need
					if err := d.commit(); err != nil {
						return done, err
					}
					continue
				}
			}
		}
		seg := p[done:min(len(p), done+need)]
		r := run(seg, table)
		copy(d.chunk[d.n:], seg[:r])
		d.sawStd(seg[:r])
		d.n += r
		done += r
		if d.n < len(d.chunk) {
			return done, nil
		}
		if err := d.flush(); err != nil {
			return done, err
		}
	}
}

// sawStd notes a + or / among plain characters, as char does.
func (d *decoder) sawStd(s []byte) {
	if !d.std && !d.url && (bytes.IndexByte(s, '+') >= 0 || bytes.IndexByte(s, '/') >= 0) {
		d.std = true
	}
}

// commit adds a whole chunk that plain decoded into decoded: flush's checks
// and bookkeeping, without decoding again.
func (d *decoder) commit() error {
	if d.out.Size()+int64(len(d.decoded)) > int64(d.max)+3 {
		return ErrTooLarge
	}
	d.out.Write(d.decoded[:])
	if d.digest != nil {
		d.digest.Write(d.decoded[:])
	}
	d.chars += len(d.chunk)
	d.n = 0
	if d.out.Size() > int64(d.max) {
		return ErrTooLarge
	}
	return nil
}

// flush decodes the pending characters (a multiple of 4 except at the end).
func (d *decoder) flush() error {
	if d.n == 0 {
		return nil
	}
	enc, _ := d.encoding()
	if d.out.Size()+int64(enc.DecodedLen(d.n)) > int64(d.max)+3 {
		return ErrTooLarge
	}
	n, err := enc.Decode(d.decoded[:], d.chunk[:d.n])
	if err != nil {
		if ce, ok := err.(base64.CorruptInputError); ok {
			return d.invalid(fmt.Sprintf("illegal data at character %d", d.chars+int(ce)))
		}
		return d.invalid(err.Error())
	}
	d.out.Write(d.decoded[:n])
	if d.digest != nil {
		d.digest.Write(d.decoded[:n])
	}
	d.chars += d.n
	d.n = 0
	if d.out.Size() > int64(d.max) {
		return ErrTooLarge
	}
	return nil
}

// finish decodes what is left and returns the bytes.
func (d *decoder) finish() (*chunkbuf.Buffer, error) {
	if d.inPrefix && len(d.prefix) < len("data:") {
		// Text too short to tell, such as "d": base64 after all.
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

func (d *decoder) parsePrefix() error {
	// The scheme and the base64 marker in any case (RFC 2397, RFC 3986).
	text := string(d.prefix)
	if len(text) < len("data:") || !strings.EqualFold(text[:len("data:")], "data:") {
		return d.prefixError()
	}
	meta := text[len("data:"):]
	if len(meta) < len(";base64") || !strings.EqualFold(meta[len(meta)-len(";base64"):], ";base64") {
		return d.prefixError()
	}
	mediaType, _, _ := strings.Cut(meta[:len(meta)-len(";base64")], ";")
	d.mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	return nil
}

func (d *decoder) prefixError() error {
	return &Error{Msg: "a data: URI must be base64-encoded (data:image/png;base64,...)"}
}

func (d *decoder) invalid(why string) error {
	return &Error{Msg: "is not valid base64: " + why}
}
