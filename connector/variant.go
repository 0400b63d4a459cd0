package connector

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Variant is one member of a responsive set: a size (and type, and
// target) made from the set's one source. A set costs one credit per
// variant; its results are keyed by ID.
type Variant struct {
	// ID names the variant in the results, the srcset and the set's ZIP
	// ("sm", "md", "lg"): 1–32 of a–z, 0–9, "-" and "_".
	ID string `json:"id"`
	// Transform is the variant's resize, convert, preserve and target.
	Transform
}

// MaxVariants is the most variants one set may ask for.
const MaxVariants = 10

var variantID = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// NormalizeVariants checks a set: 1 to MaxVariants variants, ids unique
// and well formed, each variant's options normalized under "variants[i].".
func NormalizeVariants(vs []Variant) error {
	if len(vs) == 0 || len(vs) > MaxVariants {
		return fieldErr("variants", fmt.Sprintf("must list 1 to %d variants (got %d)", MaxVariants, len(vs)))
	}
	seen := make(map[string]bool, len(vs))
	for i := range vs {
		prefix := fmt.Sprintf("variants[%d].", i)
		v := &vs[i]
		if !variantID.MatchString(v.ID) {
			return fieldErr(prefix+"id", fmt.Sprintf("must be 1 to 32 of a-z, 0-9, - and _ (got %q)", v.ID))
		}
		if seen[v.ID] {
			return fieldErr(prefix+"id", fmt.Sprintf("%q names two variants: each id once", v.ID))
		}
		seen[v.ID] = true
		if err := v.Transform.Normalize(prefix); err != nil {
			return err
		}
	}
	return nil
}

// UnmarshalJSON reads a variant strictly: a field it does not know is
// refused by name (a misspelt "resise" would otherwise make the source
// size under the variant's name).
func (v *Variant) UnmarshalJSON(b []byte) error {
	var raw struct {
		ID       string       `json:"id"`
		Resize   *Resize      `json:"resize"`
		Convert  *Convert     `json:"convert"`
		Preserve PreserveList `json:"preserve"`
		Target   *Target      `json:"target"`
	}
	if err := strictObject(b, &raw, "variants[]", "id, resize, convert, preserve, target"); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		var domain *Error
		if errors.As(err, &domain) {
			return withFieldPrefix("variants[].", domain)
		}
		return fieldErr("variants", `each variant must be an object such as {"id": "sm", "resize": "320x"}`)
	}
	*v = Variant{ID: raw.ID, Transform: Transform{Resize: raw.Resize, Convert: raw.Convert, Preserve: raw.Preserve, Target: raw.Target}}
	return nil
}

// withFieldPrefix is e with its fields named inside prefix ("target"
// becomes "variants[].target"): a variant's option is named as a
// variant's, not as the request's own.
func withFieldPrefix(prefix string, e *Error) *Error {
	out := *e
	out.Details = make([]FieldError, len(e.Details))
	for i, d := range e.Details {
		out.Details[i] = FieldError{Field: prefix + d.Field, Message: d.Message}
		if i == 0 && strings.HasPrefix(e.Message, d.Field+":") {
			out.Message = prefix + e.Message
		}
	}
	return &out
}

// VariantsFingerprint is a stable text of a normalized set, for
// Idempotency-Key fingerprints: the ids in order with their options.
func VariantsFingerprint(vs []Variant) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.ID)
		b.WriteByte('=')
		b.WriteString(v.Transform.Canonical())
		b.WriteByte('\n')
	}
	return b.String()
}
