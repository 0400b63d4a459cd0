package b64json

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchImage is n random bytes (incompressible, like an image), the same
// on every run.
func benchImage(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	return data
}

// wrap breaks s into lines of 76 characters, as MIME encoders do.
func wrap(s, eol string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76])
		b.WriteString(eol)
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}

// BenchmarkDecode decodes a job request whose image_base64 holds an image of
// 8 KiB (about the end-to-end benchmark's PNG) or 10 MiB (the cap), in the
// forms clients send. MB/s is of decoded image bytes.
func BenchmarkDecode(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"8KiB", 8 << 10}, {"10MiB", 10 << 20}} {
		data := benchImage(size.n)
		std := base64.StdEncoding.EncodeToString(data)
		for _, form := range []struct{ name, enc string }{
			{"std", std},
			{"url", base64.RawURLEncoding.EncodeToString(data)},
			{"lines", wrap(std, `\r\n`)},
			{"filecontent", std}, // Power Automate's {"$content-type","$content"}
		} {
			doc := []byte(`{"filename":"a.png","image_base64":"` + form.enc + `"}`)
			if form.name == "filecontent" {
				doc = []byte(`{"filename":"a.png","image_base64":{"$content-type":"image/png","$content":"` + form.enc + `"}}`)
			}
			opt := Options{Field: "image_base64", MaxDecoded: 10 << 20, DecodedHint: len(doc) / 4 * 3, MaxOther: 64 << 10, Lenient: true}
			b.Run(form.name+"/"+size.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				var rest struct {
					Filename string `json:"filename"`
				}
				for b.Loop() {
					res, err := Decode(bytes.NewReader(doc), opt, &rest)
					if err != nil || res.Data.Size() != int64(len(data)) {
						b.Fatalf("decoded %d bytes, %v", res.Data.Size(), err)
					}
				}
			})
		}
	}
}

// BenchmarkDecodeWithDigest is BenchmarkDecode's std form with the SHA-256
// that content dedupe takes as the field decodes (Options.Digest), beside
// the same decode without it: the difference is the hash's cost, paid
// while the decoded pieces are still in cache, with no second read of the
// image.
func BenchmarkDecodeWithDigest(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"8KiB", 8 << 10}, {"10MiB", 10 << 20}} {
		data := benchImage(size.n)
		doc := []byte(`{"filename":"a.png","image_base64":"` + base64.StdEncoding.EncodeToString(data) + `"}`)
		want := sha256.Sum256(data)
		for _, digest := range []bool{false, true} {
			name := "plain/" + size.name
			if digest {
				name = "sha256/" + size.name
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				var rest struct {
					Filename string `json:"filename"`
				}
				for b.Loop() {
					opt := Options{Field: "image_base64", MaxDecoded: 10 << 20, DecodedHint: len(doc) / 4 * 3, MaxOther: 64 << 10, Lenient: true}
					h := sha256.New()
					if digest {
						opt.Digest = h
					}
					res, err := Decode(bytes.NewReader(doc), opt, &rest)
					if err != nil || res.Data.Size() != int64(len(data)) {
						b.Fatalf("decoded %d bytes, %v", res.Data.Size(), err)
					}
					if digest && !bytes.Equal(h.Sum(nil), want[:]) {
						b.Fatal("the digest is not the image's SHA-256")
					}
				}
			})
		}
	}
}
