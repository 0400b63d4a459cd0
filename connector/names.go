package connector

import (
	"path"
	"strconv"
	"strings"
)

// Names hands out unique file names, one per result, with one rule shared
// by everything that writes several results side by side (the batch
// archive, the console's "Download all" of it, and `imgflow compress`):
// the first to ask for a name gets it; each later one gets -2, -3, … before
// the extension ("logo.webp", "logo-2.webp"). Names are compared case-
// insensitively, as the results end up on case-insensitive file systems
// too. A name may be a path ("photos/logo.webp"): the suffix goes on its
// base name.
type Names struct{ taken map[string]bool }

// NewNames is an empty set of names but for reserved, which are never
// handed out (the archive's manifest.json).
func NewNames(reserved ...string) *Names {
	n := &Names{taken: map[string]bool{}}
	for _, r := range reserved {
		n.taken[strings.ToLower(r)] = true
	}
	return n
}

// Claim returns name, or the first of name-2, name-3, … not given yet.
func (n *Names) Claim(name string) string { return n.ClaimFree(name, nil) }

// ClaimFree is Claim that also passes over the names busy reports (files
// already there that are not to be replaced); busy may be nil.
func (n *Names) ClaimFree(name string, busy func(string) bool) string {
	ext := path.Ext(name)
	if strings.Contains(ext, "/") {
		ext = ""
	}
	stem := strings.TrimSuffix(name, ext)
	out := name
	for i := 2; n.taken[strings.ToLower(out)] || (busy != nil && busy(out)); i++ {
		out = stem + "-" + strconv.Itoa(i) + ext
	}
	n.taken[strings.ToLower(out)] = true
	return out
}

// Taken reports whether name was given (or reserved), case-insensitively.
func (n *Names) Taken(name string) bool { return n.taken[strings.ToLower(name)] }
