package b64json

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// interesting are the characters the decoder treats specially, edited into
// clean base64 by the differential tests.
const interesting = " \r\n\t=-_+/*.\"\\\x00\x1f\x80\xffAz09"

// b64Case is one input to the differential tests: text (base64, clean or
// edited, or raw bytes), the decoder's settings, and where writes split it.
type b64Case struct {
	data           []byte // what clean text encodes
	text           []byte
	clean          bool // text is data encoded, unedited
	prefix         int  // length of a data: URI prefix in text
	lenient        bool
	max, hint      int
	pieces         []int
	escapeSlashesJ bool // in JSON, send / as \/
}

// makeCase builds a case from fuzzed values: data repeated to reach past
// several 4096-character chunks, encoded in form, edited by edits (triples:
// two bytes of position, one of character), split by seed.
func makeCase(data []byte, repeat uint16, form uint8, edits []byte, seed uint64) *b64Case {
	c := &b64Case{lenient: form&8 != 0, escapeSlashesJ: form&64 != 0}
	if n := int(repeat%512) + 1; len(data) > 0 && len(data)*n <= 64<<10 {
		data = bytes.Repeat(data, n)
	}
	c.data = data
	if form&128 != 0 {
		c.text = data // not base64 at all
	} else {
		enc := []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding}[form&3]
		c.text = []byte(enc.EncodeToString(data))
		c.clean = len(edits) < 3 && (c.lenient || form&2 == 0)
		if form&4 != 0 { // MIME lines
			var b []byte
			t := c.text
			for len(t) > 76 {
				b = append(append(b, t[:76]...), "\r\n"...)
				t = t[76:]
			}
			c.text = append(b, t...)
		}
		if form&16 != 0 {
			c.text = append([]byte("data:image/png;base64,"), c.text...)
			c.prefix = len("data:image/png;base64,")
			c.clean = c.clean && c.lenient
		}
	}
	for ; len(edits) >= 3 && len(c.text) > 0; edits = edits[3:] {
		pos := (int(edits[0])<<8 | int(edits[1])) % len(c.text)
		ch := edits[2]
		if ch < 0xc0 {
			ch = interesting[int(ch)%len(interesting)]
		}
		if edits[0]&0x80 != 0 {
			c.text[pos] = ch
		} else {
			c.text = append(c.text[:pos], append([]byte{ch}, c.text[pos:]...)...)
		}
	}
	switch (form >> 5) & 1 {
	case 0:
		c.max = 1 << 20
	default: // a limit in the middle of the data, at or near a chunk boundary
		c.max = max(0, len(data)-int(seed%5000))
	}
	r := rand.New(rand.NewPCG(seed, 7))
	c.hint = r.IntN(len(data) + 2)
	for left := len(c.text); left > 0; {
		n := 1 + r.IntN(min(left, []int{3, 100, 5000, 20000}[r.IntN(4)]))
		c.pieces = append(c.pieces, n)
		left -= n
	}
	return c
}

// sameErr reports whether two decoders failed alike.
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, ErrTooLarge) == errors.Is(b, ErrTooLarge) && a.Error() == b.Error()
}

// checkAgainstReference feeds c to the decoder and to the byte-by-byte
// reference in the same pieces: they must fail at the same write with the
// same error, or give the same bytes and media type. What the decoder
// accepts must be what encoding/base64 decodes, and clean text must be
// accepted as its data.
func checkAgainstReference(t *testing.T, c *b64Case) {
	t.Helper()
	d := newDecoder(c.max, c.hint, c.lenient, c.lenient)
	ref := newRefDecoder(c.max, c.hint, c.lenient, c.lenient)
	text := c.text
	for i, n := range c.pieces {
		p := text[:n]
		text = text[n:]
		err, refErr := d.write(p), ref.write(p)
		if !sameErr(err, refErr) {
			t.Fatalf("write %d of %d (%d bytes): err %v, reference %v", i, len(c.pieces), n, err, refErr)
		}
		if err != nil {
			return
		}
	}
	out, err := d.finish()
	refOut, refErr := ref.finish()
	if !sameErr(err, refErr) {
		t.Fatalf("finish: err %v, reference %v", err, refErr)
	}
	if err != nil {
		if c.clean && len(c.data) <= c.max {
			t.Fatalf("clean text of %d bytes refused: %v", len(c.data), err)
		}
		return
	}
	got := out.Bytes()
	if !bytes.Equal(got, refOut.Bytes()) || d.mediaType != ref.mediaType {
		t.Fatalf("decoded %d bytes (%q), reference %d (%q)", len(got), d.mediaType, refOut.Size(), ref.mediaType)
	}
	if c.clean && !bytes.Equal(got, c.data) {
		t.Fatalf("clean text decoded to %d bytes, not its %d", len(got), len(c.data))
	}
	// encoding/base64 on the same text: white space out, padding trimmed.
	if d.mediaType == "" && c.prefix == 0 {
		body := strings.TrimRight(strings.Map(func(r rune) rune {
			if strings.ContainsRune(" \r\n\t", r) {
				return -1
			}
			return r
		}, string(c.text)), "=")
		enc := base64.RawStdEncoding
		if strings.ContainsAny(body, "-_") {
			enc = base64.RawURLEncoding
		}
		want, err := enc.DecodeString(body)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("decoded %d bytes; encoding/base64: %d, %v", len(got), len(want), err)
		}
	}
}

// jsonString is text as a JSON string body the way clients send it (\/ for
// / when asked, \n \r \t), or false when text holds what field refuses or
// reads otherwise (quotes, backslashes, other control characters).
func jsonString(text []byte, escapeSlashes bool) ([]byte, bool) {
	var b []byte
	for _, ch := range text {
		switch {
		case ch == '/' && escapeSlashes:
			b = append(b, `\/`...)
		case ch == '\n':
			b = append(b, `\n`...)
		case ch == '\r':
			b = append(b, `\r`...)
		case ch == '\t':
			b = append(b, `\t`...)
		case ch == '"' || ch == '\\' || ch < 0x20:
			return nil, false
		default:
			b = append(b, ch)
		}
	}
	return b, true
}

// pieceReader returns its bytes in the given piece sizes.
type pieceReader struct {
	b      []byte
	pieces []int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := len(r.b)
	if len(r.pieces) > 0 {
		n, r.pieces = min(n, r.pieces[0]), r.pieces[1:]
	}
	n = copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// checkJSON sends c's text as a JSON field through Decode: the result must
// be the reference decoder's on the same text.
func checkJSON(t *testing.T, c *b64Case) {
	t.Helper()
	s, ok := jsonString(c.text, c.escapeSlashesJ)
	if !ok {
		return
	}
	doc := append(append([]byte(`{"name":"x","image":"`), s...), `"}`...)
	opt := Options{Field: "image", MaxDecoded: c.max, DecodedHint: c.hint, MaxOther: 100, Lenient: c.lenient}
	var r rest
	res, err := Decode(&pieceReader{b: doc, pieces: c.pieces}, opt, &r)
	// field hands the decoder \n for the escapes \n, \r and \t alike.
	ref := newRefDecoder(c.max, c.hint, c.lenient, c.lenient)
	sent := bytes.Clone(c.text)
	for i, ch := range sent {
		if ch == '\r' || ch == '\t' {
			sent[i] = '\n'
		}
	}
	refErr := ref.write(sent)
	var refOut []byte
	if refErr == nil {
		var out interface{ Bytes() []byte }
		out, refErr = ref.finish()
		if refErr == nil {
			refOut = out.Bytes()
		}
	}
	if !sameErr(err, withField(refErr, "image")) {
		t.Fatalf("Decode: err %v, reference %v", err, refErr)
	}
	if err == nil && (!bytes.Equal(res.Data.Bytes(), refOut) || res.MediaType != ref.mediaType || r.Name != "x") {
		t.Fatalf("Decode: %d bytes (%q), reference %d (%q)", res.Data.Size(), res.MediaType, len(refOut), ref.mediaType)
	}
}

// FuzzDecoderMatchesReference holds the decoder (its fast path: whole chunks
// decoded straight from the input, runs of plain characters copied) to the
// byte-by-byte decoder it replaced and to encoding/base64, on base64 text
// of up to 64 KiB in every form with random edits, split at random writes;
// and Decode, the same text in a JSON document, to the same reference.
func FuzzDecoderMatchesReference(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), uint16(400), uint8(0), []byte{}, uint64(1))
	f.Add([]byte("\xfb\xff\xbf"), uint16(3000), uint8(8|2), []byte{}, uint64(2))
	f.Add([]byte("\xfb\xff\xbf\x00"), uint16(2000), uint8(8|4|16), []byte{}, uint64(3))
	f.Add([]byte("abc"), uint16(4000), uint8(1|32|64), []byte{}, uint64(4))
	f.Add([]byte("any bytes at all"), uint16(600), uint8(128|8), []byte{}, uint64(5))
	f.Add([]byte("\xfb\xff\xbf\x01"), uint16(3000), uint8(8), []byte{0x15, 0x00, 12, 0x30, 0x01, 0}, uint64(6))
	f.Add([]byte("\xfb\xff\xbf\x01"), uint16(3000), uint8(8|2), []byte{0x95, 0x55, 10, 0x10, 0x00, 4}, uint64(7))
	f.Add([]byte("xyz"), uint16(5000), uint8(0), []byte{0x0f, 0xff, 4, 0x0f, 0xff, 4, 0x10, 0x00, 0}, uint64(8))
	f.Fuzz(func(t *testing.T, data []byte, repeat uint16, form uint8, edits []byte, seed uint64) {
		if len(data) > 64<<10 || len(edits) > 300 {
			return
		}
		c := makeCase(data, repeat, form, edits, seed)
		checkAgainstReference(t, c)
		checkJSON(t, c)
	})
}

// TestDecoderMatchesReference is the fuzz target's check on random cases,
// in every go test run.
func TestDecoderMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		data := make([]byte, 1+r.IntN(40))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		var edits []byte
		for range r.IntN(4) {
			edits = append(edits, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()))
		}
		c := makeCase(data, uint16(r.Uint32()), uint8(r.Uint32()), edits, r.Uint64())
		t.Run("", func(t *testing.T) {
			checkAgainstReference(t, c)
			checkJSON(t, c)
		})
		_ = i
	}
}

// TestHasControl holds the eight-at-a-time check to a byte loop.
func TestHasControl(t *testing.T) {
	for i := range 20 {
		for _, b := range []byte{0x00, 0x1f, 0x20, 0x7f, 0x80, 0xa0, 0xff} {
			s := bytes.Repeat([]byte{0x20}, i)
			if i > 0 {
				s[i-1] = b
			}
			want := i > 0 && b < 0x20
			if got := hasControl(s); got != want {
				t.Errorf("%q: %v, want %v", s, got, want)
			}
		}
	}
}

// TestFastPathKeepsTheAlphabetRules: a + or / seen only inside a chunk
// decoded whole still makes a later - or _ an error, and a - seen makes a
// later chunk with a + one.
func TestFastPathKeepsTheAlphabetRules(t *testing.T) {
	first := strings.Repeat("A", 4092) + "AA+A" // one whole chunk, with one +
	for _, tc := range []struct{ text, want string }{
		{first + "AAAA-AAA", "mixes"},
		{first + "AAAA_AAA", "mixes"},
		{strings.Repeat("A", 100) + "-" + strings.Repeat("A", 5000) + "/" + strings.Repeat("A", 5000), "mixes"},
		{strings.Repeat("A", 8192) + "=" + strings.Repeat("A", 8192), "after the padding"},
		{strings.Repeat("A", 4096) + "*" + strings.Repeat("A", 8191), "illegal data at character 4096"},
	} {
		for _, lenient := range []bool{true, false} {
			d := newDecoder(1<<20, 0, lenient, lenient)
			err := d.write([]byte(tc.text))
			if err == nil {
				_, err = d.finish()
			}
			ref := newRefDecoder(1<<20, 0, lenient, lenient)
			refErr := ref.write([]byte(tc.text))
			if refErr == nil {
				_, refErr = ref.finish()
			}
			if !sameErr(err, refErr) || err == nil || (lenient && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("%.20q… (lenient %v): err %v, reference %v, want %q", tc.text, lenient, err, refErr, tc.want)
			}
		}
	}
}
