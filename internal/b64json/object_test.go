package b64json

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

type rest struct {
	Name string         `json:"name"`
	Meta map[string]any `json:"meta"`
}

func opts() Options {
	return Options{Field: "image", MaxDecoded: 1 << 20, MaxOther: 4096, Lenient: true}
}

func TestDecodeStreamsTheFieldAndUnmarshalsTheRest(t *testing.T) {
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	std := base64.StdEncoding.EncodeToString(data)
	cases := map[string]string{
		"standard":           std,
		"no padding":         strings.TrimRight(std, "="),
		"URL-safe":           base64.URLEncoding.EncodeToString(data),
		"escaped slashes":    strings.ReplaceAll(std, "/", `\/`),
		"line breaks":        std[:76] + `\n` + std[76:152] + `\r\n` + std[152:],
		"data URI":           "data:image/png;base64," + std,
		"data URI with args": "data:image/PNG;name=a.png;base64," + std,
	}
	for name, enc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := `{"name":"a\"b","image":"` + enc + `", "meta": {"x":[1,{"y":"}"}]}}` + "\n"
			var r rest
			// One byte at a time: every boundary of the buffered reader.
			res, err := Decode(iotest.OneByteReader(strings.NewReader(doc)), opts(), &r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Data.Bytes(), data) {
				t.Fatalf("decoded %d bytes, not the %d sent", res.Data.Size(), len(data))
			}
			if r.Name != `a"b` || r.Meta["x"] == nil {
				t.Errorf("rest = %+v", r)
			}
			if strings.HasPrefix(enc, "data:") && res.MediaType != "image/png" {
				t.Errorf("media type = %q, want image/png", res.MediaType)
			}
		})
	}
}

// TestBase64ThatStartsLikeADataURI: text is taken as a data: URI only
// while it can still be "data:", so base64 starting with d, da, dat or data
// decodes as base64, whatever pieces it arrives in.
func TestBase64ThatStartsLikeADataURI(t *testing.T) {
	for _, text := range []string{"d3d3", "dataAAAA", "datA", "ZGF0YQ==", `d3d3d3d3\nd3d3`} {
		want, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(text, `\n`, ""))
		if err != nil {
			t.Fatal(err)
		}
		for _, read := range []func(string) io.Reader{
			func(s string) io.Reader { return strings.NewReader(s) },
			func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		} {
			var r rest
			res, err := Decode(read(`{"image":"`+text+`"}`), opts(), &r)
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			if !bytes.Equal(res.Data.Bytes(), want) || res.MediaType != "" {
				t.Fatalf("%q: decoded %q (type %q), want %q", text, res.Data.Bytes(), res.MediaType, want)
			}
		}
	}
	var r rest
	if _, err := Decode(strings.NewReader(`{"image":"data:image/png,AAAA"}`), opts(), &r); err == nil {
		t.Fatal("a data: URI that is not base64 was accepted")
	}
}

func TestDecodeRefusesWhatIsNotOneCleanObject(t *testing.T) {
	ok := base64.StdEncoding.EncodeToString([]byte("hello world"))
	cases := []struct{ doc, field, text string }{
		{``, "", "empty"},
		{`[1]`, "", "JSON object"},
		{`{"image":"` + ok + `"} x`, "", "after the JSON object"},
		{`{"image":"` + ok + `"}{}`, "", "after the JSON object"},
		{`{"image":"` + ok + `",}`, "", "not valid JSON"},
		{`{"image":"` + ok + `"`, "", "not valid JSON"},
		{`{"image":"` + ok, "", "not valid JSON"},
		{`{"name":tru}`, "", "not valid JSON"},
		{`{"image":5}`, "image", "must be a string"},
		{`{"image":"YQ==","image":"Yg=="}`, "image", "only once"},
		{`{"image":"***"}`, "image", "not valid base64"},
		{`{"image":"aGVsbG8=aGVsbG8="}`, "image", "after the padding"},
		{`{"image":"aGVsbG8-+"}`, "image", "mixes"},
		{`{"image":"aGVsb"}`, "image", "middle of a byte"},
		{`{"image":"\u0041"}`, "image", "illegal escape"},
		{`{"image":"data:image/png,abc"}`, "image", "data: URI"},
	}
	for _, tc := range cases {
		var r rest
		_, err := Decode(strings.NewReader(tc.doc), opts(), &r)
		var e *Error
		if !errors.As(err, &e) || e.Field != tc.field || !strings.Contains(e.Msg, tc.text) {
			t.Errorf("%s: err = %v, want field %q and %q", tc.doc, err, tc.field, tc.text)
		}
	}
	var r rest
	if _, err := Decode(strings.NewReader(`{"name":5}`), opts(), &r); err == nil {
		t.Error("a wrongly typed other field was accepted")
	} else if _, ok := err.(*json.UnmarshalTypeError); !ok {
		t.Errorf("err = %T %v, want the json type error", err, err)
	}
}

func TestDecodeStopsAtTheLimit(t *testing.T) {
	o := opts()
	o.MaxDecoded = 1000
	over := base64.StdEncoding.EncodeToString(make([]byte, 1001))
	if _, err := Decode(strings.NewReader(`{"image":"`+over+`"}`), o, &rest{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
	at := base64.StdEncoding.EncodeToString(make([]byte, 1000))
	if res, err := Decode(strings.NewReader(`{"image":"`+at+`"}`), o, &rest{}); err != nil || res.Data.Size() != 1000 {
		t.Errorf("exactly the limit: %v", err)
	}
	o.MaxOther = 10
	if _, err := Decode(strings.NewReader(`{"name":"`+strings.Repeat("x", 20)+`"}`), o, &rest{}); err == nil {
		t.Error("other fields over MaxOther were accepted")
	}
}

func TestDecodeTextReadsAPart(t *testing.T) {
	res, err := DecodeText(strings.NewReader("data:image/webp;base64,"+base64.StdEncoding.EncodeToString([]byte("abc"))), opts())
	if err != nil || string(res.Data.Bytes()) != "abc" || res.MediaType != "image/webp" {
		t.Fatalf("res = %+v, %v", res, err)
	}
	if _, err := DecodeText(strings.NewReader("!!"), opts()); err == nil || !strings.Contains(err.Error(), "image: is not valid base64") {
		t.Errorf("err = %v", err)
	}
}

// Power Automate's file content, {"$content-type", "$content"}, in the
// field's place decodes as the base64 string would, its type declared.
func TestDecodeTakesFileContent(t *testing.T) {
	data := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 1, 2, 3}, 5000)
	enc := base64.StdEncoding.EncodeToString(data)
	for name, field := range map[string]string{
		"type first":    `{"$content-type":"Image/PNG; charset=binary","$content":"` + enc + `"}`,
		"content first": `{ "$content" : "` + enc + `" , "$content-type" : "image/png" }`,
		"no type":       `{"$content":"` + enc + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var r rest
			res, err := Decode(iotest.OneByteReader(strings.NewReader(`{"name":"x","image":`+field+`,"meta":{}}`)), opts(), &r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Data.Bytes(), data) || r.Name != "x" {
				t.Fatalf("decoded %d bytes and name %q, want the %d sent and x", res.Data.Size(), r.Name, len(data))
			}
			if want := map[bool]string{true: "", false: "image/png"}[name == "no type"]; res.MediaType != want {
				t.Errorf("media type %q, want %q", res.MediaType, want)
			}
		})
	}
	for field, msg := range map[string]string{
		`{"$content-type":"image/png"}`:                    `needs "$content"`,
		`{"$content":"AAAA","name":"a.png"}`:               `only "$content-type" and "$content"`,
		`{"$content":"AAAA","$content":"AAAA"}`:            "given once",
		`{"$content":1}`:                                   "must be a string",
		`{"$content":"AAAA","$content-type":"not a type"}`: "media type",
		`{"$content":"AAAA",}`:                             "before '}'",
		`{"$content":"AAAA"`:                               "",
	} {
		_, err := Decode(strings.NewReader(`{"image":`+field+`}`), opts(), &rest{})
		var e *Error
		if err == nil || (msg != "" && !strings.Contains(err.Error(), msg)) || (msg != "" && !errors.As(err, &e)) {
			t.Errorf("%s: error %v, want one saying %q", field, err, msg)
		}
	}
}
