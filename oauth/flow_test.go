package oauth_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// client is an OAuth client driving an imgflow's authorization server over
// HTTP as a browser and an app would: a cookie jar for the consent page,
// redirects not followed (the app reads them).
type client struct {
	t        *testing.T
	base     string
	http     *http.Client
	id       string
	redirect string
}

func newClient(t *testing.T, base string) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: base, redirect: "http://127.0.0.1:9/callback", http: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// register registers the client dynamically with its redirect URI.
func (c *client) register() *client {
	c.t.Helper()
	status, body := c.postJSON("/register", `{"client_name":"Test agent","redirect_uris":["`+c.redirect+`"],"token_endpoint_auth_method":"none"}`)
	if status != http.StatusCreated {
		c.t.Fatalf("register: %d %s; want 201", status, body)
	}
	c.id = body["client_id"].(string)
	return c
}

func (c *client) postJSON(path, body string) (int, map[string]any) {
	c.t.Helper()
	res, err := c.http.Post(c.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	return decode(c.t, res)
}

func (c *client) postForm(path string, form url.Values) (int, map[string]any) {
	c.t.Helper()
	res, err := c.http.PostForm(c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	return decode(c.t, res)
}

func decode(t *testing.T, res *http.Response) (int, map[string]any) {
	t.Helper()
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var v map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s answered %d, not JSON: %s", res.Request.URL, res.StatusCode, raw)
		}
	}
	return res.StatusCode, v
}

// pkce is a verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authParams is an authorization request of the client with challenge.
func (c *client) authParams(challenge string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirect}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {c.base + "/mcp"}}
}

// page is an answer of /authorize: its status, where it redirects, its HTML.
type page struct {
	status   int
	location *url.URL
	html     string
}

func (c *client) get(path string, q url.Values) page {
	c.t.Helper()
	res, err := c.http.Get(c.base + path + "?" + q.Encode())
	if err != nil {
		c.t.Fatal(err)
	}
	return readPage(c.t, res)
}

func readPage(t *testing.T, res *http.Response) page {
	t.Helper()
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	p := page{status: res.StatusCode, html: string(raw)}
	if loc := res.Header.Get("Location"); loc != "" {
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatalf("Location %q: %v", loc, err)
		}
		p.location = u
	}
	return p
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consent loads the consent page for q and submits it with the key and
// decision; it returns the POST's answer.
func (c *client) consent(q url.Values, key, decision string) page {
	c.t.Helper()
	p := c.get("/authorize", q)
	if p.status != http.StatusOK {
		c.t.Fatalf("GET /authorize: %d, Location %v: %s; want the consent page", p.status, p.location, p.html)
	}
	m := csrfField.FindStringSubmatch(p.html)
	if m == nil {
		c.t.Fatalf("the consent page has no csrf field: %s", p.html)
	}
	form := url.Values{}
	for k, v := range q {
		form[k] = v
	}
	form.Set("csrf", strings.ReplaceAll(m[1], "&#43;", "+"))
	form.Set("api_key", key)
	form.Set("decision", decision)
	return c.postConsent(form, nil)
}

func (c *client) postConsent(form url.Values, header map[string]string) page {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return readPage(c.t, res)
}

// code runs the consent with key and returns the code and the verifier.
func (c *client) code(key string) (code, verifier string) {
	c.t.Helper()
	verifier, challenge := pkce()
	p := c.consent(c.authParams(challenge), key, "allow")
	if p.status != http.StatusSeeOther || p.location == nil {
		c.t.Fatalf("POST /authorize: %d %s; want 303 to the app", p.status, p.html)
	}
	q := p.location.Query()
	if got := p.location.Scheme + "://" + p.location.Host + p.location.Path; got != c.redirect {
		c.t.Fatalf("redirected to %s; want %s", got, c.redirect)
	}
	if q.Get("state") != "st-1" || q.Get("iss") != c.base || q.Get("code") == "" {
		c.t.Fatalf("redirect query %v; want code, state st-1 and iss %s", q, c.base)
	}
	return q.Get("code"), verifier
}

// exchange redeems a code: the status and the token answer.
func (c *client) exchange(code, verifier string) (int, map[string]any) {
	c.t.Helper()
	return c.postForm("/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {c.id}, "redirect_uri": {c.redirect}, "resource": {c.base + "/mcp"}})
}

// tokens runs the whole flow with key: an access and a refresh token.
func (c *client) tokens(key string) (access, refresh string) {
	c.t.Helper()
	status, body := c.exchange(c.code(key))
	if status != http.StatusOK {
		c.t.Fatalf("POST /token: %d %v; want 200", status, body)
	}
	return body["access_token"].(string), body["refresh_token"].(string)
}

func (c *client) refresh(token string) (int, map[string]any) {
	c.t.Helper()
	return c.postForm("/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {c.id}})
}
