// Package b64json reads a JSON object one of whose fields is a large base64
// string (an image), decoding that field while it streams in instead of
// holding its text, the decoder's buffer and the decoded bytes at once. Job
// requests (image_base64) and the compression API's answers
// (compressed_data) carry up to 10 MiB that way.
package b64json

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"sync"

	"github.com/imgflow/imgflow/internal/chunkbuf"
)

// ErrTooLarge is returned when the decoded field exceeds Options.MaxDecoded.
var ErrTooLarge = errors.New("b64json: decoded field over the limit")

// Error is a malformed document (Field "") or field.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Options says which field streams and how.
type Options struct {
	Field      string // the base64 field
	MaxDecoded int    // its largest decoded size
	// DecodedHint is the expected decoded size (from Content-Length, or the
	// image sent): the output's chunks end there exactly (see chunkbuf).
	DecodedHint int
	// MaxOther bounds the JSON text of all the other fields together.
	MaxOther int
	// Lenient accepts the URL-safe alphabet and a data: URI prefix.
	Lenient bool
	// Digest, when set, is written the decoded bytes as they are decoded
	// (a hash taken while the field streams, without reading it again).
	Digest io.Writer
	// OnField, when set, is given every other field as soon as it is read
	// (its name and JSON text), before anything after it: an error stops
	// the decoding there (a key in the body is checked before the image
	// that follows it is read).
	OnField func(name string, raw []byte) error
	// Strict refuses a field that rest has no place for, with
	// encoding/json's error for it (`json: unknown field "name"`).
	Strict bool
}

// Result is the decoded field.
type Result struct {
	// Data is the decoded bytes, held in chunks (never copied while they
	// grow); nil when the field is absent or null.
	Data    *chunkbuf.Buffer
	Present bool
	// MediaType is the data: URI's declared type, lower case; "" when none.
	MediaType string
}

// Decode reads one JSON object from r: the field named in opt is decoded
// from base64 as it streams; every other field is unmarshalled into rest
// (a pointer to a struct or map) as encoding/json would. Anything after the
// object other than white space is an error.
func Decode(r io.Reader, opt Options, rest any) (*Result, error) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil) // drop r
		readers.Put(br)
	}()
	s := &scanner{r: br, opt: opt}
	res, err := s.object()
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(&s.rest)
	if opt.Strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(rest); err != nil {
		return nil, err
	}
	return res, nil
}

// readers are Decode's read buffers: a request body and an upstream answer
// are decoded per job, and a fresh 32 KiB each time was a quarter of the
// bytes a job allocated. Nothing Decode returns points into them.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// DecodeText decodes base64 text that is not inside JSON (a multipart
// text part), with the same rules as a field.
func DecodeText(r io.Reader, opt Options) (*Result, error) {
	d := newDecoder(opt.MaxDecoded, opt.DecodedHint, opt.Lenient, opt.Lenient)
	d.digest = opt.Digest
	defer d.release()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if werr := d.write(buf[:n]); werr != nil {
			return nil, withField(werr, opt.Field)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	data, err := d.finish()
	if err != nil {
		return nil, withField(err, opt.Field)
	}
	return &Result{Data: data, Present: true, MediaType: d.mediaType}, nil
}

func withField(err error, field string) error {
	var e *Error
	if errors.As(err, &e) && e.Field == "" {
		return &Error{Field: field, Msg: e.Msg}
	}
	return err
}

type scanner struct {
	r    *bufio.Reader
	opt  Options
	rest bytes.Buffer // {"other":fields,...} for json.Unmarshal
	res  Result
}

func syntaxErr(format string, args ...any) error {
	return &Error{Msg: "request body is not valid JSON: " + fmt.Sprintf(format, args...)}
}

// next returns the next byte that is not white space; io.EOF at the end.
func (s *scanner) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

// must is next where the end of input is a syntax error.
func (s *scanner) must() (byte, error) {
	c, err := s.next()
	if err == io.EOF {
		return 0, syntaxErr("unexpected end of input")
	}
	return c, err
}

func (s *scanner) object() (*Result, error) {
	c, err := s.next()
	switch {
	case err == io.EOF:
		return nil, &Error{Msg: "request body is empty: send a JSON object"}
	case err != nil:
		return nil, err
	case c != '{':
		return nil, &Error{Msg: "request body must be a JSON object"}
	}
	s.rest.WriteByte('{')
	if c, err = s.must(); err != nil {
		return nil, err
	}
	for first := true; c != '}' || !first; first = false {
		if c != '"' {
			return nil, syntaxErr("expected a field name")
		}
		rawKey, err := s.value('"', 1024)
		if err != nil {
			return nil, err
		}
		var key string
		if err := json.Unmarshal(rawKey, &key); err != nil {
			return nil, syntaxErr("bad field name")
		}
		if c, err = s.must(); err != nil {
			return nil, err
		}
		if c != ':' {
			return nil, syntaxErr("expected ':' after field %q", key)
		}
		if c, err = s.must(); err != nil {
			return nil, err
		}
		if key == s.opt.Field {
			if err := s.field(c); err != nil {
				return nil, err
			}
		} else {
			raw, err := s.value(c, s.opt.MaxOther-s.rest.Len())
			if err != nil {
				return nil, err
			}
			if s.rest.Len() > 1 {
				s.rest.WriteByte(',')
			}
			s.rest.Write(rawKey)
			s.rest.WriteByte(':')
			s.rest.Write(raw)
			if s.opt.OnField != nil {
				if err := s.opt.OnField(key, raw); err != nil {
					return nil, err
				}
			}
		}
		if c, err = s.must(); err != nil {
			return nil, err
		}
		if c == '}' {
			break
		}
		if c != ',' {
			return nil, syntaxErr("expected ',' or '}' after field %q", key)
		}
		if c, err = s.must(); err != nil {
			return nil, err
		}
		if c == '}' {
			return nil, syntaxErr("a ',' before '}'")
		}
	}
	s.rest.WriteByte('}')
	if _, err := s.next(); err != io.EOF {
		if err != nil {
			return nil, err
		}
		return nil, &Error{Msg: "request body has data after the JSON object: send exactly one object"}
	}
	return &s.res, nil
}

// field streams the base64 field's value, whose first byte is c.
func (s *scanner) field(c byte) error {
	name := s.opt.Field
	if s.res.Present {
		return &Error{Field: name, Msg: "must appear only once"}
	}
	s.res.Present = true
	if c == 'n' {
		lit, err := s.value(c, 8)
		if err != nil || string(lit) != "null" {
			return &Error{Field: name, Msg: "must be a string"}
		}
		s.res.Present = false
		return nil
	}
	if c == '{' {
		return s.fileContent()
	}
	if c != '"' {
		return &Error{Field: name, Msg: "must be a string"}
	}
	return s.base64String()
}

// fileContent reads Power Automate's file content, the object
// {"$content-type": "image/png", "$content": "<base64>"} in either order,
// whose opening brace is read: $content streams like a base64 string and
// $content-type is its declared type, as a data: URI's would be.
func (s *scanner) fileContent() error {
	name := s.opt.Field
	bad := func(msg string) error { return &Error{Field: name, Msg: msg} }
	declared, sawContent := "", false
	c, err := s.must()
	if err != nil {
		return err
	}
	for c != '}' {
		if c != '"' {
			return syntaxErr("expected a field name in %s", name)
		}
		rawKey, err := s.value('"', 64)
		if err != nil {
			return bad(`as an object takes only "$content-type" and "$content"`)
		}
		var key string
		if json.Unmarshal(rawKey, &key) != nil {
			return syntaxErr("bad field name in %s", name)
		}
		if c, err = s.must(); err != nil {
			return err
		}
		if c != ':' {
			return syntaxErr("expected ':' after %q in %s", key, name)
		}
		if c, err = s.must(); err != nil {
			return err
		}
		switch {
		case key == "$content" && c == '"' && !sawContent:
			sawContent = true
			if err := s.base64String(); err != nil {
				return err
			}
		case key == "$content-type" && c == '"' && declared == "":
			raw, err := s.value(c, 256)
			if err != nil || json.Unmarshal(raw, &declared) != nil || declared == "" {
				return bad(`"$content-type" must be a media type such as image/png`)
			}
		case key == "$content" || key == "$content-type":
			return bad(fmt.Sprintf("%q must be a string, given once", key))
		default:
			return bad(fmt.Sprintf(`as an object takes only "$content-type" and "$content" (not %q)`, key))
		}
		if c, err = s.must(); err != nil {
			return err
		}
		if c == ',' {
			if c, err = s.must(); err != nil {
				return err
			}
			if c == '}' {
				return syntaxErr("a ',' before '}' in %s", name)
			}
		} else if c != '}' {
			return syntaxErr("expected ',' or '}' in %s", name)
		}
	}
	if !sawContent {
		return bad(`file content needs "$content" (the file in base64)`)
	}
	if declared != "" {
		mt, _, err := mime.ParseMediaType(declared)
		if err != nil {
			return bad(`"$content-type" must be a media type such as image/png`)
		}
		// "$content" may be a data: URI with a type of its own: two
		// declarations that disagree are a flow's mistake, not a choice.
		own := s.res.MediaType
		switch {
		case own == "" || own == "application/octet-stream":
			s.res.MediaType = mt // lower case, parameters dropped
		case mt == "application/octet-stream" || sameImageType(own, mt):
		default:
			return bad(fmt.Sprintf(`"$content-type" says %s but the data: URI in "$content" says %s`, mt, own))
		}
	}
	return nil
}

// base64String streams a base64 string whose opening quote is read into
// the result.
func (s *scanner) base64String() error {
	name := s.opt.Field
	d := newDecoder(s.opt.MaxDecoded, s.fieldHint(), s.opt.Lenient, s.opt.Lenient)
	d.digest = s.opt.Digest
	defer d.release()
	var esc [1]byte
	for {
		buf, err := s.r.Peek(max(1, s.r.Buffered()))
		if err != nil && len(buf) == 0 {
			if err == io.EOF {
				return syntaxErr("unexpected end of input in %s", name)
			}
			return err
		}
		if len(buf) == 1 && s.r.Buffered() > 1 {
			buf, _ = s.r.Peek(s.r.Buffered()) // Peek(1) filled the buffer: all of it
		}
		// Up to the first '\\' or '"' (IndexByte is vectorized; IndexAny
		// is not), with no control character before it. The escape first:
		// text may have one every few characters (\/ or \n), its closing
		// quote comes once.
		i := bytes.IndexByte(buf, '\\')
		if i < 0 {
			i = len(buf)
		}
		if j := bytes.IndexByte(buf[:i], '"'); j >= 0 {
			i = j
		}
		if hasControl(buf[:i]) {
			return syntaxErr("control character in %s", name)
		}
		if err := d.write(buf[:i]); err != nil {
			return withField(err, name)
		}
		s.r.Discard(i)
		if i == len(buf) {
			continue
		}
		if buf[i] == '"' {
			s.r.Discard(1)
			break
		}
		// An escape: base64 text only ever needs \/ and white space.
		s.r.Discard(1)
		e, err := s.r.ReadByte()
		if err != nil {
			return syntaxErr("unexpected end of input in %s", name)
		}
		switch e {
		case '/':
			esc[0] = '/'
		case 'n', 'r', 't':
			esc[0] = '\n' // white space, skipped by the decoder
		default:
			return &Error{Field: name, Msg: fmt.Sprintf("is not valid base64: illegal escape \\%c", e)}
		}
		if err := d.write(esc[:]); err != nil {
			return withField(err, name)
		}
	}
	data, err := d.finish()
	if err != nil {
		return withField(err, name)
	}
	s.res.Data, s.res.MediaType = data, d.mediaType
	return nil
}

// fieldHint is the decoded size to expect: DecodedHint, or, without one,
// what the field's text would decode to when its closing quote is already
// read (a small body that came without a Content-Length), so that the
// bytes land in one chunk rather than several.
func (s *scanner) fieldHint() int {
	if s.opt.DecodedHint > 0 {
		return s.opt.DecodedHint
	}
	buf, _ := s.r.Peek(s.r.Buffered())
	if i := bytes.IndexByte(buf, '"'); i >= 0 {
		return (i + 3) / 4 * 3 // escapes and white space only make it more
	}
	return 0
}

// hasControl reports whether s holds a byte below 0x20, eight at a time:
// a byte under 0x20 borrows, and so sets its top bit, in x-0x20…20 while its
// top bit in x is clear (a borrow only crosses from a byte that is under
// 0x20 itself, so there is no false positive).
func hasControl(s []byte) bool {
	for ; len(s) >= 8; s = s[8:] {
		x := binary.LittleEndian.Uint64(s)
		if (x-0x2020202020202020)&^x&0x8080808080808080 != 0 {
			return true
		}
	}
	for _, b := range s {
		if b < 0x20 {
			return true
		}
	}
	return false
}

// value reads one JSON value whose first byte, c, was already read, and
// returns its text (at most limit bytes).
func (s *scanner) value(c byte, limit int) ([]byte, error) {
	out := []byte{c}
	grow := func(b byte) error {
		out = append(out, b)
		if len(out) > limit {
			return &Error{Msg: "request body: the fields other than the image are too large"}
		}
		return nil
	}
	depth, inString := 0, c == '"'
	switch c {
	case '{', '[':
		depth = 1
	case '"':
	default:
		// A literal: read up to the next delimiter.
		for {
			b, err := s.r.ReadByte()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			if strings.IndexByte(",}] \t\r\n", b) >= 0 {
				s.r.UnreadByte()
				break
			}
			if err := grow(b); err != nil {
				return nil, err
			}
		}
		if !json.Valid(out) {
			return nil, syntaxErr("invalid value %.20q", out)
		}
		return out, nil
	}
	for escaped := false; inString || depth > 0; {
		b, err := s.r.ReadByte()
		if err == io.EOF {
			return nil, syntaxErr("unexpected end of input")
		}
		if err != nil {
			return nil, err
		}
		if err := grow(b); err != nil {
			return nil, err
		}
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case inString:
		case b == '{' || b == '[':
			depth++
		case b == '}' || b == ']':
			depth--
		}
	}
	if !json.Valid(out) {
		return nil, syntaxErr("invalid value %.20q", out)
	}
	return out, nil
}

// sameImageType reports whether two media types name the same format
// (image/jpg and image/pjpeg are JPEG's aliases).
func sameImageType(a, b string) bool {
	alias := func(t string) string {
		if t == "image/jpg" || t == "image/pjpeg" {
			return "image/jpeg"
		}
		return t
	}
	return alias(a) == alias(b)
}
