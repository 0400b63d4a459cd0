// Package console is imgflow's web console, served at / by the API: sign in
// with an API key, try a compression, watch jobs, read and replay their
// deliveries, manage hooks and copy connection snippets. It is plain HTML,
// CSS and JavaScript modules embedded in the binary (no build step), and
// it talks only to the public API of the server that serves it, with the
// key in a header. Its browser tests live in e2e/ (see README.md).
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the console's assets are served; the page itself is /.
const Prefix = "/console/"

// ContentSecurityPolicy is sent with every console response: only the
// console's own scripts and styles (nothing inline), requests to this
// origin only, images from it or made in the page (blob: previews, data:).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the page at / and its assets under Prefix; anything
// else is a 404.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		switch {
		case r.URL.Path == "/":
			// No caching of the page, so a new version's asset list is seen
			// at once; the assets themselves are small.
			h.Set("Cache-Control", "no-cache")
			h.Set("Content-Type", "text/html; charset=utf-8")
			w.Write(index)
		case strings.HasPrefix(r.URL.Path, Prefix) && !strings.HasSuffix(r.URL.Path, "/") && r.URL.Path != Prefix+"index.html":
			h.Set("Cache-Control", "no-cache")
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
