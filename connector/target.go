package connector

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Target asks for a result of at most MaxBytes bytes, for the job's one
// credit: imgflow searches encoder quality (then dimensions, when
// AllowResize) locally before the one call of the compression API, and
// shrinks the answer locally when it comes back over. It is part of the
// job's Transform, so batches, the dry run and dedupe carry it like any
// other option.
type Target struct {
	// MaxBytes is the budget; JSON takes a number or a size with a unit
	// ("100KB" = 100,000, "200KiB" = 204,800: see ParseByteSize).
	MaxBytes int64 `json:"max_bytes"`
	// AllowResize lets the search reduce dimensions once quality alone
	// cannot fit; absent means true (a file that fits is what was asked).
	AllowResize *bool `json:"allow_resize,omitempty"`
	// MinScore is a SSIMULACRA2 floor (0–100; 90 is visually lossless):
	// a candidate scoring below it does not count as reaching the target.
	MinScore *float64 `json:"min_score,omitempty"`
}

// ETARGETUNREACHABLE: no candidate of the search fits the target (within
// min_score and without resizing when that is not allowed). 422, nothing
// charged; the error's details name the smallest size reached.
const ETARGETUNREACHABLE ErrorCode = "target_unreachable"

// MaxTargetBytes is the largest target accepted: far above any input
// (10 MiB), so a generous target is never a mistake, yet still a number.
const MaxTargetBytes = 1 << 30

// Resizes reports whether the search may reduce dimensions.
func (t *Target) Resizes() bool { return t.AllowResize == nil || *t.AllowResize }

// ParseByteSize reads a size as people write it: bytes ("100000"), SI units
// ("100KB", "1.5 MB", "100k") or binary units ("200KiB", "2MiB"), any case.
// Fractions round down to whole bytes.
func ParseByteSize(text string) (int64, error) {
	s := strings.TrimSpace(text)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	number, unit := s, ""
	if i >= 0 {
		number, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	}
	v, err := strconv.ParseFloat(number, 64)
	if err != nil || number == "" || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("must be a size such as 100000, \"100KB\", \"1.5MB\" or \"200KiB\" (got %q)", text)
	}
	var scale float64
	switch strings.ToLower(unit) {
	case "", "b":
		scale = 1
	case "k", "kb":
		scale = 1e3
	case "m", "mb":
		scale = 1e6
	case "kib":
		scale = 1 << 10
	case "mib":
		scale = 1 << 20
	default:
		return 0, fmt.Errorf("unknown unit %q: use B, KB, MB (1000s) or KiB, MiB (1024s)", unit)
	}
	return int64(math.Floor(v * scale)), nil
}

// UnmarshalJSON takes the object, or the size alone ("100KB", 100000).
func (t *Target) UnmarshalJSON(b []byte) error {
	if size, ok, err := targetSize(b, "target"); ok {
		if err != nil {
			return err
		}
		*t = Target{MaxBytes: size}
		return nil
	}
	var v struct {
		MaxBytes    json.RawMessage `json:"max_bytes"`
		AllowResize *bool           `json:"allow_resize"`
		MinScore    *float64        `json:"min_score"`
	}
	if err := strictObject(b, &v, "target", "max_bytes, allow_resize, min_score"); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fieldErr("target", `must be an object such as {"max_bytes": "100KB"}, or "100KB"`)
	}
	if len(v.MaxBytes) == 0 || string(v.MaxBytes) == "null" {
		return fieldErr("target.max_bytes", "is required: the most bytes the result may have, such as 100000 or \"100KB\"")
	}
	size, _, err := targetSize(v.MaxBytes, "target.max_bytes")
	if err != nil {
		return err
	}
	*t = Target{MaxBytes: size, AllowResize: v.AllowResize, MinScore: v.MinScore}
	return nil
}

// targetSize reads a JSON number or string as a byte size; ok is false
// when b is neither.
func targetSize(b []byte, field string) (size int64, ok bool, err error) {
	var text string
	if json.Unmarshal(b, &text) != nil {
		var n json.Number
		if json.Unmarshal(b, &n) != nil {
			return 0, false, nil
		}
		text = n.String()
	}
	size, perr := ParseByteSize(text)
	if perr != nil {
		return 0, true, fieldErr(field, perr.Error())
	}
	return size, true, nil
}

// normalize checks t's bounds; prefix as Transform.Normalize's.
func (t *Target) normalize(prefix string) error {
	if t.MaxBytes < 1 || t.MaxBytes > MaxTargetBytes {
		return fieldErr(prefix+"target.max_bytes", fmt.Sprintf("must be from 1 byte to 1GiB (got %d)", t.MaxBytes))
	}
	if s := t.MinScore; s != nil && (*s < 0 || *s > 100 || math.IsNaN(*s)) {
		return fieldErr(prefix+"target.min_score", fmt.Sprintf("must be a SSIMULACRA2 score from 0 to 100 (got %g)", *s))
	}
	return nil
}

// canonical is t for dedupe keys: what changes the result, defaults spelt
// out, so {"max_bytes": 1000} and "1KB" are one key.
func (t *Target) canonical() string {
	score := "-"
	if t.MinScore != nil {
		score = strconv.FormatFloat(*t.MinScore, 'g', -1, 64)
	}
	return fmt.Sprintf("target=%d,%t,%s;", t.MaxBytes, t.Resizes(), score)
}

func (t *Target) clone() *Target {
	if t == nil {
		return nil
	}
	out := *t
	if t.AllowResize != nil {
		v := *t.AllowResize
		out.AllowResize = &v
	}
	if t.MinScore != nil {
		v := *t.MinScore
		out.MinScore = &v
	}
	return &out
}

// applyTargetText sets t's target from form-shaped fields: "target" (a
// size or the JSON object), "target_max_bytes", "target_allow_resize",
// "target_min_score".
func (t *Transform) applyTargetText(text map[string]string) error {
	if v := text["target"]; v != "" {
		var target Target
		if err := target.UnmarshalJSON(jsonText(v)); err != nil {
			return err
		}
		t.Target = &target
	}
	if v := text["target_max_bytes"]; v != "" {
		size, err := ParseByteSize(v)
		if err != nil {
			return fieldErr("target_max_bytes", err.Error())
		}
		if t.Target == nil {
			t.Target = &Target{}
		}
		t.Target.MaxBytes = size
	}
	if v := text["target_allow_resize"]; v != "" {
		var allow bool
		switch strings.ToLower(v) {
		case "true", "1":
			allow = true
		case "false", "0":
		default:
			return fieldErr("target_allow_resize", "must be true or false")
		}
		if t.Target == nil {
			return fieldErr("target_max_bytes", "target_allow_resize needs target_max_bytes, such as 100KB")
		}
		t.Target.AllowResize = &allow
	}
	if v := text["target_min_score"]; v != "" {
		score, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fieldErr("target_min_score", "must be a number from 0 to 100")
		}
		if t.Target == nil {
			return fieldErr("target_max_bytes", "target_min_score needs target_max_bytes, such as 100KB")
		}
		t.Target.MinScore = &score
	}
	return nil
}
