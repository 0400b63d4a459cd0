package connector

import (
	"fmt"
	"strings"
)

// VariantSpecExample is the short form of a set, as help texts show it.
const VariantSpecExample = "sm=320w,md=800w:webp,lg=1600w"

// ParseVariantSpec reads the short form of a set, as the CLI's --variants
// and a raw-body upload's ?variants= take it: ID=SIZE[:TYPE],… where SIZE
// is 320w or 320 (a width), x480 (a height) or 320x480 (a box, fitted),
// and TYPE webp, avif, jpeg or png. It reads the form only: the set is
// checked by NormalizeVariants. Errors are EINVALID on field.
func ParseVariantSpec(field, spec string) ([]Variant, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fieldErr(field, "is empty: list the sizes as ID=SIZE[:TYPE], such as "+VariantSpecExample)
	}
	var vs []Variant
	for _, item := range strings.Split(spec, ",") {
		id, size, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || size == "" {
			return nil, fieldErr(field, fmt.Sprintf("%q is not ID=SIZE[:TYPE], such as sm=320w or lg=1600w:webp", item))
		}
		size, typ, _ := strings.Cut(size, ":")
		size = strings.ToLower(strings.TrimSpace(size))
		if w, ok := strings.CutSuffix(size, "w"); ok && !strings.Contains(w, "x") {
			size = w + "x" // 320w: the width
		}
		r, err := ParseResizeText(field, size, "")
		if err != nil {
			return nil, fieldErr(field, fmt.Sprintf("%s: the size %q must be 320w (a width), x480 (a height) or 320x480 (a box)", id, size))
		}
		v := Variant{ID: id, Transform: Transform{Resize: r}}
		if typ = strings.TrimSpace(typ); typ != "" {
			v.Convert = &Convert{Type: typ}
		}
		vs = append(vs, v)
	}
	return vs, nil
}
