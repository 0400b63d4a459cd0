package oauth_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/oauth"
)

// The authorization server alone on miniredis, with a clock the test moves
// and a key check that knows one key.

const goodKey = "key-with-credits"

type harness struct {
	*oauth.Server
	redis *miniredis.Miniredis
	base  string
	mu    sync.Mutex
	now   time.Time
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

func newHarness(t *testing.T, docs *http.Client) *harness {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	keys, err := keyring.New("oauth-unit-test-secret-0123")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	h := &harness{redis: mr, base: "http://" + srv.Listener.Addr().String(), now: time.Now()}
	h.Server = oauth.New(oauth.Config{
		Store: oauth.NewStore(rdb, "t:"), Keyring: keys, PublicURL: h.base, DocumentClient: docs,
		CheckKey: func(_ context.Context, key string) error {
			if key == goodKey {
				return nil
			}
			return &connector.Error{Code: connector.EUNAUTHORIZED, Message: "Invalid API key"}
		},
		Now: func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now },
	})
	srv.Config.Handler = h.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	return h
}

func TestRegistrationTakesHTTPSOrLoopbackRedirectURIs(t *testing.T) {
	h := newHarness(t, nil)
	c := newClient(t, h.base)
	for uri, want := range map[string]int{
		"https://app.example/callback":         201,
		"http://127.0.0.1:8080/callback":       201,
		"http://[::1]:8080/callback":           201,
		"http://localhost:3000/cb":             201,
		"http://app.example/callback":          400,
		"https://app.example/callback#frag":    400,
		"javascript:alert(1)":                  400,
		"/relative":                            400,
		"https://user:pw@app.example/callback": 400,
	} {
		status, body := c.postJSON("/register", `{"client_name":"x","redirect_uris":["`+uri+`"]}`)
		if status != want {
			t.Errorf("register %s: %d %v; want %d", uri, status, body, want)
		}
		if status == 201 && (body["token_endpoint_auth_method"] != "none" || body["client_secret"] != nil) {
			t.Errorf("register %s: %v; want a public client without a secret", uri, body)
		}
	}
	if status, body := c.postJSON("/register", `{"client_name":"x"}`); status != 400 || body["error"] != "invalid_redirect_uri" {
		t.Errorf("register without redirect_uris: %d %v; want 400 invalid_redirect_uri", status, body)
	}
}

func TestCodeAndAccessTokenExpire(t *testing.T) {
	h := newHarness(t, nil)
	c := newClient(t, h.base).register()
	code, verifier := c.code(goodKey)
	h.advance(oauth.CodeTTL + time.Second)
	if status, body := c.exchange(code, verifier); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("a code past CodeTTL: %d %v; want 400 invalid_grant", status, body)
	}
	access, _ := c.tokens(goodKey)
	if key, ok, err := h.ResolveToken(context.Background(), access); !ok || err != nil || key != goodKey {
		t.Fatalf("ResolveToken of a fresh token: %q %v %v; want the key", key, ok, err)
	}
	h.advance(oauth.AccessTTL + time.Second)
	if _, ok, _ := h.ResolveToken(context.Background(), access); ok {
		t.Errorf("an access token past AccessTTL still resolves")
	}
	if _, ok, _ := h.ResolveToken(context.Background(), goodKey); ok {
		t.Errorf("an API key resolves as an access token")
	}
}

// documentServer serves a client ID metadata document over TLS on
// loopback, counting fetches.
func documentServer(t *testing.T, doc func(self string) string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	var ts *httptest.Server
	ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(doc(ts.URL + r.URL.Path)))
	}))
	t.Cleanup(ts.Close)
	return ts, &hits
}

// loopbackDocs fetches documents from ts through the guard with loopback
// allowed and ts's certificate trusted.
func loopbackDocs(ts *httptest.Server) *http.Client {
	tr := guard.NewTransport(guard.Loopback())
	tr.TLSClientConfig = &tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	c := oauth.DocumentClient(guard.Loopback())
	c.Transport = tr
	return c
}

func TestClientMetadataDocumentIsFetchedCheckedAndCached(t *testing.T) {
	redirect := "http://127.0.0.1:9/callback"
	ts, hits := documentServer(t, func(self string) string {
		return `{"client_id":"` + self + `","client_name":"Doc Agent","redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"none"}`
	})
	h := newHarness(t, loopbackDocs(ts))
	c := newClient(t, h.base)
	c.id = ts.URL + "/client.json"
	_, challenge := pkce()
	p := c.get("/authorize", c.authParams(challenge))
	if p.status != 200 || !strings.Contains(p.html, "Doc Agent") {
		t.Fatalf("consent page for a metadata document client: %d %s; want it naming Doc Agent", p.status, p.html)
	}
	access, _ := c.tokens(goodKey)
	if _, ok, _ := h.ResolveToken(context.Background(), access); !ok {
		t.Errorf("the document client's token does not resolve")
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the document was fetched %d times; want once (cached)", n)
	}
	q := c.authParams(challenge)
	q.Set("redirect_uri", "http://127.0.0.1:9/elsewhere")
	if p := c.get("/authorize", q); p.status != 400 || p.location != nil {
		t.Errorf("a redirect URI not in the document: %d to %v; want 400 on the page", p.status, p.location)
	}
}

func TestClientMetadataDocumentRefusals(t *testing.T) {
	redirect := "http://127.0.0.1:9/callback"
	good := func(self string) string {
		return `{"client_id":"` + self + `","client_name":"Doc Agent","redirect_uris":["` + redirect + `"]}`
	}
	for name, tc := range map[string]struct {
		doc     func(self string) string
		path    string
		private bool // fetched with the production client: public addresses only
		fetched bool
	}{
		"private address": {doc: good, path: "/client.json", private: true, fetched: false},
		"other client_id": {doc: func(string) string {
			return `{"client_id":"https://elsewhere.example/c.json","redirect_uris":["` + redirect + `"]}`
		}, path: "/client.json", fetched: true},
		"too large": {doc: func(self string) string {
			return `{"client_id":"` + self + `","client_name":"` + strings.Repeat("x", 20<<10) + `","redirect_uris":["` + redirect + `"]}`
		}, path: "/client.json", fetched: true},
		"a secret": {doc: func(self string) string {
			return `{"client_id":"` + self + `","client_secret":"s","token_endpoint_auth_method":"client_secret_basic","redirect_uris":["` + redirect + `"]}`
		}, path: "/client.json", fetched: true},
		"no path": {doc: good, path: "/", fetched: false},
	} {
		t.Run(name, func(t *testing.T) {
			ts, hits := documentServer(t, tc.doc)
			docs := loopbackDocs(ts)
			if tc.private {
				docs = nil // New's default: the guard with no exception
			}
			h := newHarness(t, docs)
			c := newClient(t, h.base)
			c.id = ts.URL + tc.path
			_, challenge := pkce()
			p := c.get("/authorize", c.authParams(challenge))
			if p.status != 400 || p.location != nil || !strings.Contains(p.html, "client metadata document") {
				t.Errorf("%d to %v: %s; want 400 on the page naming the document", p.status, p.location, p.html)
			}
			if got := hits.Load() > 0; got != tc.fetched {
				t.Errorf("document server hit: %v; want %v", got, tc.fetched)
			}
		})
	}
}

// The token check in front of /mcp costs one Redis command for a token,
// none for an API key, and keeps nothing in the process: a token revoked
// between two checks is refused by the second.
func TestTokenCheckIsOneRedisReadAndCachesNothing(t *testing.T) {
	h := newHarness(t, nil)
	c := newClient(t, h.base).register()
	access, _ := c.tokens(goodKey)
	ctx := context.Background()
	before := h.redis.CommandCount()
	if _, ok, err := h.ResolveToken(ctx, access); !ok || err != nil {
		t.Fatalf("ResolveToken: %v %v", ok, err)
	}
	if n := h.redis.CommandCount() - before; n != 1 {
		t.Errorf("ResolveToken of a token sent %d Redis commands; want 1", n)
	}
	before = h.redis.CommandCount()
	h.ResolveToken(ctx, goodKey)
	if n := h.redis.CommandCount() - before; n != 0 {
		t.Errorf("ResolveToken of an API key sent %d Redis commands; want 0", n)
	}
	if status, _ := c.postForm("/revoke", url.Values{"token": {access}}); status != 200 {
		t.Fatalf("revoke: %d", status)
	}
	if _, ok, _ := h.ResolveToken(ctx, access); ok {
		t.Errorf("a token revoked after a check still resolves")
	}
}

// Browser-based MCP clients reach the metadata, token, registration and
// revocation endpoints from their own origin (CORS); the consent page is
// not shared with other origins.
func TestOpenEndpointsAnswerOtherOrigins(t *testing.T) {
	h := newHarness(t, nil)
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp", "/token", "/register", "/revoke"} {
		req, _ := http.NewRequest(http.MethodOptions, h.base+path, nil)
		req.Header.Set("Origin", "https://inspector.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("preflight of %s: %d, Allow-Origin %q; want 204 and *", path, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	res, err := http.Get(h.base + "/authorize")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("the consent page answers other origins")
	}
}

// A grant revoked while a refresh is under way is not brought back by the
// refresh's write: its tokens are taken back and the refresh refused.
func TestPutTokensDoesNotBringBackARevokedGrant(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	st := oauth.NewStore(rdb, "t:")
	ctx := context.Background()
	g := &oauth.Grant{ID: "ifg_1", Owner: "owner", ClientID: "ifc_1"}
	exp := time.Now().Add(time.Hour)
	if err := st.PutGrant(ctx, g, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	err := st.PutTokens(ctx, g, "ah", &oauth.Access{GrantID: g.ID, ExpiresAt: exp}, "rh", &oauth.Refresh{GrantID: g.ID, ExpiresAt: exp})
	if err != oauth.ErrGrantRevoked {
		t.Errorf("PutTokens of a revoked grant: %v; want ErrGrantRevoked", err)
	}
	if _, ok, _ := st.Grant(ctx, g.ID); ok {
		t.Errorf("the revoked grant is back")
	}
	if _, ok, _ := st.Access(ctx, "ah"); ok {
		t.Errorf("the revoked grant's new access token is stored")
	}
}

// Anonymous registrations are bounded: so many a minute from everyone, and
// a registration nobody uses leaves Redis within UnusedClientTTL; its
// first use keeps it for ClientTTL.
func TestRegistrationsAreBounded(t *testing.T) {
	h := newHarness(t, nil)
	c := newClient(t, h.base)
	body := `{"client_name":"x","redirect_uris":["https://app.example/callback"]}`
	var first string
	for i := range oauth.RegistrationsPerMinute {
		status, got := c.postJSON("/register", body)
		if status != 201 {
			t.Fatalf("registration %d: %d %v; want 201", i+1, status, got)
		}
		if first == "" {
			first = got["client_id"].(string)
		}
	}
	if status, got := c.postJSON("/register", body); status != 429 || got["error"] != "temporarily_unavailable" {
		t.Fatalf("registration %d in one minute: %d %v; want 429", oauth.RegistrationsPerMinute+1, status, got)
	}
	h.advance(time.Minute)
	if status, got := c.postJSON("/register", body); status != 201 {
		t.Fatalf("a registration in the next minute: %d %v; want 201", status, got)
	}
	if ttl := h.redis.TTL("t:oauth:client:{" + first + "}"); ttl <= 0 || ttl > oauth.UnusedClientTTL {
		t.Fatalf("an unused registration's TTL %v; want at most %v", ttl, oauth.UnusedClientTTL)
	}
	used := newClient(t, h.base).register()
	used.code(goodKey)
	if ttl := h.redis.TTL("t:oauth:client:{" + used.id + "}"); ttl <= oauth.UnusedClientTTL {
		t.Fatalf("a used registration's TTL %v; want ClientTTL", ttl)
	}
	long := `{"redirect_uris":["https://app.example/` + strings.Repeat("a", 2100) + `"]}`
	if status, got := c.postJSON("/register", long); status != 400 {
		t.Fatalf("a 2,100-character redirect URI: %d %v; want 400", status, got)
	}
}
