package console

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func TestThePageAndItsAssetsComeWithAStrictPolicy(t *testing.T) {
	for path, ctype := range map[string]string{
		"/":                  "text/html",
		"/console/app.js":    "text/javascript",
		"/console/api.js":    "text/javascript",
		"/console/style.css": "text/css",
	} {
		res, body := get(t, path)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) || body == "" {
			t.Errorf("%s: expected 200 %s, got %d %q", path, ctype, res.StatusCode, res.Header.Get("Content-Type"))
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, part := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob: data:", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, part) {
				t.Errorf("%s: expected %q in the policy, got %q", path, part, csp)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: expected no unsafe-* source, got %q", path, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: expected nosniff", path)
		}
	}
}

func TestOnlyThePageAndItsFilesAreServed(t *testing.T) {
	for _, path := range []string{"/console/", "/console/index.html", "/console/nope.js", "/elsewhere"} {
		if res, _ := get(t, path); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: expected 404, got %d", path, res.StatusCode)
		}
	}
}

// The policy forbids inline code; this keeps the page from relying on it
// (the browser tests would see the page break, this names the place).
func TestNoInlineScriptStyleOrOutsideResources(t *testing.T) {
	_, page := get(t, "/")
	scripts := regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Fatal("expected the page to load its script")
	}
	for _, m := range scripts {
		if !strings.Contains(m[1], `src="/console/`) || strings.TrimSpace(m[2]) != "" {
			t.Errorf("expected only scripts loaded from /console/, found %q", m[0])
		}
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(?:src|href)="(?:https?:)?//`),
	} {
		for _, m := range re.FindAllString(page, -1) {
			t.Errorf("expected no inline style, handler or outside resource, found %q", m)
		}
	}
}

func TestEveryControlOfThePageHasALabel(t *testing.T) {
	_, page := get(t, "/")
	labelled := map[string]bool{}
	for _, m := range regexp.MustCompile(`<label for="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		labelled[m[1]] = true
	}
	controls := regexp.MustCompile(`<(input|select|textarea)\s[^>]*>`).FindAllString(page, -1)
	if len(controls) < 8 {
		t.Fatalf("expected the page's form controls, found %d", len(controls))
	}
	idRe := regexp.MustCompile(`\sid="([^"]+)"`)
	for _, c := range controls {
		id := idRe.FindStringSubmatch(c)
		if id == nil || !labelled[id[1]] {
			t.Errorf("expected a <label for> for %s", c)
		}
	}
}

func TestScriptsNeverPutTheKeyInAURL(t *testing.T) {
	// The key is read in one place and sent as a header only.
	sub, _ := fs.Sub(assets, "assets")
	files, _ := fs.Glob(sub, "*.js")
	for _, f := range files {
		b, _ := fs.ReadFile(sub, f)
		src := string(b)
		if f != "api.js" && strings.Contains(src, "sessionStorage") {
			t.Errorf("%s: expected sessionStorage used only in api.js", f)
		}
		if regexp.MustCompile(`[?&](api_key|key|token)=`).MatchString(src) {
			t.Errorf("%s: expected no key parameter in any URL", f)
		}
	}
}

// TestTryItOffersEveryTransformOptionLabelled: Try it has a control for
// each transform option the API takes (width, height, method, enlarge,
// type, background, each preserve group), each with its own label, and
// says truthfully what a repeat costs.
func TestTryItOffersEveryTransformOptionLabelled(t *testing.T) {
	_, page := get(t, "/")
	for _, id := range []string{"try-width", "try-height", "try-method", "try-enlarge", "try-format", "try-background",
		"try-preserve-copyright", "try-preserve-creation", "try-preserve-location", "try-max-size"} {
		if !regexp.MustCompile(`<(input|select)[^>]*\bid="` + id + `"`).MatchString(page) {
			t.Errorf("no control %s", id)
		}
		if n := strings.Count(page, `<label for="`+id+`"`); n != 1 {
			t.Errorf("control %s has %d labels, want 1", id, n)
		}
	}
	if strings.Contains(page, "free: still one credit") {
		t.Error("Try it still calls options free while charging a credit")
	}
	if !strings.Contains(page, "same options is free") {
		t.Error("Try it does not say that a repeat of the same image and options costs nothing")
	}
	_, js := get(t, "/console/try.js")
	for _, field := range []string{"resize_method", "resize_enlarge", "background", "preserve"} {
		if !strings.Contains(js, "out."+field) {
			t.Errorf("try.js never sends %s", field)
		}
	}
}
