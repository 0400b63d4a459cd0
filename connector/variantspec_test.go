package connector

import (
	"strings"
	"testing"
)

func TestParseVariantSpecReadsTheShortForm(t *testing.T) {
	vs, err := ParseVariantSpec("variants", " sm=320w:webp, md=800 ,lg=x900,box=400x300:AVIF")
	if err != nil {
		t.Fatal(err)
	}
	if err := NormalizeVariants(vs); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id            string
		width, height int
		method, typ   string
	}{{"sm", 320, 0, ResizeScale, "image/webp"}, {"md", 800, 0, ResizeScale, ""}, {"lg", 0, 900, ResizeScale, ""}, {"box", 400, 300, ResizeFit, "image/avif"}}
	if len(vs) != len(want) {
		t.Fatalf("%d variants; want %d", len(vs), len(want))
	}
	for i, w := range want {
		v := vs[i]
		typ := ""
		if v.Convert != nil {
			typ = v.Convert.Type
		}
		if v.ID != w.id || v.Resize.Width != w.width || v.Resize.Height != w.height || v.Resize.Method != w.method || typ != w.typ {
			t.Errorf("variant %d = %s %+v %q; want %+v", i, v.ID, v.Resize, typ, w)
		}
	}
}

func TestParseVariantSpecRefusesWhatItCannotRead(t *testing.T) {
	for spec, says := range map[string]string{
		"":              "is empty",
		"sm":            `"sm" is not ID=SIZE`,
		"=320w":         "is not ID=SIZE",
		"sm=":           "is not ID=SIZE",
		"sm=wide":       `sm: the size "wide"`,
		"sm=320w,,lg=1": `"" is not ID=SIZE`,
		"sm=0w":         `the size "0x"`,
	} {
		_, err := ParseVariantSpec("variants", spec)
		e := AsError(err)
		if e == nil || e.Code != EINVALID || len(e.Details) != 1 || e.Details[0].Field != "variants" || !strings.Contains(e.Message, says) {
			t.Errorf("%q: %v; want invalid_input on variants saying %q", spec, err, says)
		}
	}
}
