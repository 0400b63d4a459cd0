package webhook

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// snippet makes the start of a receiver's answer fit for the delivery log:
// a rune cut by the byte limit dropped, other invalid bytes replaced,
// control characters other than newline and tab removed, spaces trimmed.
func snippet(b []byte) string {
	if n := len(b); n > 0 {
		start := n - 1
		for start > 0 && start > n-utf8.UTFMax && !utf8.RuneStart(b[start]) {
			start--
		}
		if !utf8.FullRune(b[start:]) {
			b = b[:start]
		}
	}
	s := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(string(b), "\uFFFD"))
	return strings.TrimSpace(s)
}
