package server

import (
	"strconv"
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
)

// A create-job request with "variants" asks for a responsive set
// (connector.VariantSet): a JSON array in a JSON body; as text (a
// multipart "variants" part, a raw-body upload's ?variants=) the same
// array, or the short form the CLI takes, sm=320w,lg=1600w:webp
// (connector.ParseVariantSpec). Each variant carries its
// own resize, convert, preserve and target; the request's own transform
// fields are refused beside it, so that no option applies twice.

// resolveVariants reads and checks the request's variants, refusing before
// anything is stored what the worker would refuse of each.
func (in *jobRequest) resolveVariants() error {
	switch {
	case in.variantsText == "":
	case strings.HasPrefix(in.variantsText, "["):
		if err := decodeJSON(strings.NewReader(in.variantsText), &in.Variants); err != nil {
			if isCode(err, connector.EINVALID) && !strings.HasPrefix(connector.AsError(err).Message, "variants") {
				return fieldError("variants", "must be a JSON array such as [{\"id\": \"sm\", \"resize\": \"320x\"}]: "+connector.AsError(err).Message)
			}
			return err
		}
		if in.Variants == nil {
			in.Variants = []connector.Variant{}
		}
	default:
		vs, err := connector.ParseVariantSpec("variants", in.variantsText)
		if err != nil {
			return err
		}
		in.Variants = vs
	}
	if in.Variants == nil {
		return nil
	}
	if !in.transform.IsZero() {
		return fieldError("variants", "each variant carries its own resize, convert, preserve and target: move the request's into its variants")
	}
	if err := connector.NormalizeVariants(in.Variants); err != nil {
		return err
	}
	sniffed := ""
	if in.image != nil {
		sniffed = connector.SniffBytes(in.image)
	}
	needsLibvips := imaging.IsHEIF(sniffed)
	for i, v := range in.Variants {
		t := v.Transform
		if t.IsZero() {
			continue
		}
		needsLibvips = true
		if len(t.Preserve) > 0 && imaging.OutputType(sniffed, t) == "image/avif" {
			return fieldError(variantField(i, "preserve"), "metadata cannot be kept in an AVIF result; convert to webp, jpeg or png, or leave preserve out")
		}
		if err := imaging.CheckEnlargement(t); err != nil {
			return err
		}
	}
	if !needsLibvips {
		return nil
	}
	if err := imaging.Available(); err != nil {
		return imaging.Unavailable(err)
	}
	if in.image != nil {
		for _, v := range in.Variants {
			if err := checkKnownImage(in.image, v.Transform); err != nil {
				return err
			}
		}
	}
	return nil
}

func variantField(i int, name string) string {
	return "variants[" + strconv.Itoa(i) + "]." + name
}
