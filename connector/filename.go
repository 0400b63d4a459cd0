package connector

import (
	"strings"
	"unicode"
)

// IsInvisible reports a character a file name shows nothing of, or
// breaks a line with: format characters (zero-width space U+200B, BOM
// U+FEFF, word joiner U+2060, soft hyphen U+00AD, bidi controls, tag
// characters U+E0000–E007F) and the line and paragraph separators. Such a
// name looks like another one, or splits a header or log line.
func IsInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' || (r >= 0xE0000 && r <= 0xE007F)
}

// WithoutInvisible is name with its invisible characters (IsInvisible)
// removed.
func WithoutInvisible(name string) string {
	if strings.IndexFunc(name, IsInvisible) < 0 {
		return name
	}
	return strings.Map(func(r rune) rune {
		if IsInvisible(r) {
			return -1
		}
		return r
	}, name)
}
