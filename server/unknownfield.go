package server

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/labstack/echo/v4"
)

// Strict input: a field this API does not know is refused with 400 naming
// it, rather than dropped, since a misspelt "callbakc_url" would otherwise
// drop the callback without a word (Stripe answers "Received unknown
// parameter" for the same reason). A name close to a known one comes with
// a suggestion.

// unknownFieldPrefix is how encoding/json (DisallowUnknownFields) and
// internal/b64json (Options.Strict) name a field the target does not have.
const unknownFieldPrefix = "json: unknown field "

// unknownFieldName returns the field an unknown-field error names.
func unknownFieldName(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	rest, ok := strings.CutPrefix(err.Error(), unknownFieldPrefix)
	if !ok {
		return "", false
	}
	name, uerr := strconv.Unquote(rest)
	if uerr != nil {
		return rest, true
	}
	return name, true
}

// unknownField is the 400 for a field that is not one of known.
func unknownField(field string, known []string) *connector.Error {
	msg := "is not a field of this request"
	if near := nearest(field, known); near != "" {
		msg += "; did you mean " + near + "?"
	} else if len(known) > 0 {
		msg += " (fields: " + strings.Join(known, ", ") + ")"
	}
	return &connector.Error{Code: connector.EINVALID, Message: "unknown field " + strconv.Quote(field) + ": " + msg,
		Details: []connector.FieldError{{Field: field, Message: msg}}}
}

// jsonFields lists the JSON names of v's struct fields (v a struct or a
// pointer to one), in declaration order.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous { // an embedded struct's fields are promoted, exported or not
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name != "":
			out = append(out, name)
		case f.Anonymous:
			out = append(out, jsonFields(reflect.New(f.Type).Interface())...)
		default:
			out = append(out, f.Name)
		}
	}
	return out
}

// nearest is the known name field most likely meant: the same letters in
// another case or order of words, or within a small edit distance (two
// edits, or one for short names); "" when none is close.
func nearest(field string, known []string) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("-", "_", " ", "_").Replace(s)) }
	best, bestDist := "", 0
	for _, k := range known {
		if norm(k) == norm(field) || strings.ReplaceAll(norm(k), "_", "") == strings.ReplaceAll(norm(field), "_", "") {
			return k
		}
		limit := 2
		if len(k) <= 4 {
			limit = 1
		}
		if d := editDistance(norm(field), norm(k)); d <= limit && (best == "" || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b (byte
// wise): insertions, deletions, substitutions and swaps of neighbours each
// cost one, so "callbakc" is one from "callback".
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// checkQuery refuses a query parameter that is not one of known (a
// misspelt "?resise=100" would otherwise run a job untransformed and
// charge it).
func checkQuery(c echo.Context, known ...string) error {
	for name := range c.QueryParams() {
		if !slices.Contains(known, name) {
			return unknownField(name, known)
		}
	}
	return nil
}
