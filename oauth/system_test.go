package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// The authorization server in the whole system (serve + work on Redis and
// the reference compression API), over real HTTP.

// callMCP calls check_account at base's /mcp with header; the status,
// the WWW-Authenticate and the body.
func callMCP(t *testing.T, base, header, value string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_account","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if header != "" {
		req.Header.Set(header, value)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("WWW-Authenticate"), string(raw)
}

func TestMetadataNamesEveryEndpoint(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API)
	for path, resource := range map[string]string{"/.well-known/oauth-protected-resource/mcp": s.API + "/mcp",
		"/.well-known/oauth-protected-resource": s.API} {
		res, err := http.Get(s.API + path)
		if err != nil {
			t.Fatal(err)
		}
		status, prm := decode(t, res)
		if status != 200 || prm["resource"] != resource || prm["authorization_servers"].([]any)[0] != s.API {
			t.Errorf("%s: %d %v; want resource %s served by %s", path, status, prm, resource, s.API)
		}
	}
	res, err := c.http.Get(s.API + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	_, as := decode(t, res)
	want := map[string]any{"issuer": s.API, "authorization_endpoint": s.API + "/authorize", "token_endpoint": s.API + "/token",
		"registration_endpoint": s.API + "/register", "revocation_endpoint": s.API + "/revoke",
		"client_id_metadata_document_supported": true, "authorization_response_iss_parameter_supported": true}
	for k, v := range want {
		if as[k] != v {
			t.Errorf("authorization server metadata %s = %v; want %v", k, as[k], v)
		}
	}
	if m := as["code_challenge_methods_supported"].([]any); len(m) != 1 || m[0] != "S256" {
		t.Errorf("code_challenge_methods_supported %v; want [S256] only", m)
	}
	if g := as["grant_types_supported"].([]any); len(g) != 2 || g[0] != "authorization_code" || g[1] != "refresh_token" {
		t.Errorf("grant_types_supported %v; want authorization_code and refresh_token", g)
	}
}

func TestUnauthorizedMCPNamesTheResourceMetadata(t *testing.T) {
	s := systemtest.Start(t)
	meta := `resource_metadata="` + s.API + `/.well-known/oauth-protected-resource/mcp"`
	status, ch, _ := callMCP(t, s.API, "", "")
	if status != 401 || !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, meta) || strings.Contains(ch, "error=") {
		t.Errorf("no credentials: %d, WWW-Authenticate %q; want 401 Bearer with %s and no error= (RFC 6750)", status, ch, meta)
	}
	for _, sent := range []string{"Bearer ifa_not-a-token", "Bearer not-a-key"} {
		status, ch, _ := callMCP(t, s.API, "Authorization", sent)
		if status != 401 || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, meta) {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 with error=\"invalid_token\" and %s", sent, status, ch, meta)
		}
	}
}

func TestAccessTokenActsAsItsKeyAndIsStoredWithoutSecrets(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API).register()
	code, verifier := c.code(s.Key)
	status, tok := c.exchange(code, verifier)
	if status != 200 || tok["token_type"] != "Bearer" || tok["expires_in"].(float64) > 3600 || tok["access_token"] == s.Key {
		t.Fatalf("token answer %d %v; want a Bearer token, not the key, expiring within an hour", status, tok)
	}
	access := tok["access_token"].(string)
	status, _, body := callMCP(t, s.API, "Authorization", "Bearer "+access)
	if status != 200 || !strings.Contains(body, `"credits_remaining":500`) {
		t.Errorf("check_account with the token: %d %s; want the key's 500 credits", status, body)
	}
	if status, _, body := callMCP(t, s.API, "Authorization", "Bearer "+s.Key); status != 200 || strings.Contains(body, "isError\":true") {
		t.Errorf("check_account with the Bearer key: %d %s; want it to keep working", status, body)
	}
	if status, _, _ := callMCP(t, s.API, "X-API-Key", s.Key); status != 200 {
		t.Errorf("check_account with X-API-Key: %d; want it to keep working", status)
	}
	// Neither the key nor a token is in Redis in plain text.
	ctx := context.Background()
	keys, err := s.Redis.Client.Keys(ctx, s.Redis.Prefix+"oauth:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("oauth keys in Redis: %v %v", keys, err)
	}
	for _, k := range keys {
		var vals []string
		switch s.Redis.Client.Type(ctx, k).Val() {
		case "string":
			vals = []string{s.Redis.Client.Get(ctx, k).Val()}
		case "set":
			vals = s.Redis.Client.SMembers(ctx, k).Val()
		}
		for _, v := range append(vals, k) {
			for name, secret := range map[string]string{"API key": s.Key, "access token": access, "refresh token": tok["refresh_token"].(string), "code": code} {
				if strings.Contains(v, secret) {
					t.Errorf("Redis %s holds the %s in plain text", k, name)
				}
			}
		}
	}
}

func TestCodeWorksOnceAndOnlyWithItsVerifier(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API).register()
	code, verifier := c.code(s.Key)
	wrong, _ := pkce()
	if status, body := c.exchange(code, wrong); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("exchange with another verifier: %d %v; want 400 invalid_grant", status, body)
	}
	// The failed try spent the code: a code is taken once, whatever comes of it.
	if status, body := c.exchange(code, verifier); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("exchange after a failed try: %d %v; want 400 invalid_grant", status, body)
	}
	code, verifier = c.code(s.Key)
	if status, _ := c.exchange(code, verifier); status != 200 {
		t.Fatalf("first exchange: %d; want 200", status)
	}
	if status, body := c.exchange(code, verifier); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("second exchange of one code: %d %v; want 400 invalid_grant", status, body)
	}
	other := newClient(t, s.API).register()
	code, verifier = c.code(s.Key)
	other.redirect = c.redirect
	if status, body := other.exchange(code, verifier); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("exchange by another client: %d %v; want 400 invalid_grant", status, body)
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API).register()
	_, challenge := pkce()
	redirected := func(name string, q url.Values, wantErr string) {
		t.Helper()
		p := c.get("/authorize", q)
		if p.status != http.StatusSeeOther || p.location == nil || p.location.Query().Get("error") != wantErr ||
			p.location.Query().Get("code") != "" || p.location.Query().Get("iss") != s.API || p.location.Query().Get("state") != "st-1" {
			t.Errorf("%s: %d to %v; want 303 to the app with error=%s, state and iss, no code", name, p.status, p.location, wantErr)
		}
	}
	shown := func(name string, q url.Values) {
		t.Helper()
		p := c.get("/authorize", q)
		if p.status != http.StatusBadRequest || p.location != nil || !strings.Contains(p.html, `role="alert"`) {
			t.Errorf("%s: %d to %v; want 400 on the page, never a redirect", name, p.status, p.location)
		}
	}
	q := c.authParams(challenge)
	q.Del("code_challenge")
	q.Del("code_challenge_method")
	redirected("without PKCE", q, "invalid_request")
	q = c.authParams(challenge)
	q.Set("code_challenge_method", "plain")
	redirected("plain PKCE", q, "invalid_request")
	q = c.authParams(challenge)
	q.Del("code_challenge_method")
	redirected("no challenge method (plain by default)", q, "invalid_request")
	q = c.authParams(challenge)
	q.Set("response_type", "token")
	redirected("implicit grant", q, "unsupported_response_type")
	q = c.authParams(challenge)
	q.Set("resource", "https://elsewhere.example/mcp")
	redirected("another resource", q, "invalid_target")
	for name, uri := range map[string]string{"foreign": "https://attacker.example/callback", "trailing slash": c.redirect + "/",
		"other port": "http://127.0.0.1:10/callback", "extra query": c.redirect + "?x=1"} {
		q = c.authParams(challenge)
		q.Set("redirect_uri", uri)
		shown("redirect URI "+name, q)
	}
	q = c.authParams(challenge)
	q.Set("client_id", "ifc_unknown")
	shown("unknown client", q)
}

func TestConsentChecksTheKeyAndTheForm(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API).register()
	_, challenge := pkce()
	q := c.authParams(challenge)
	p := c.consent(q, "not-a-key", "allow")
	if p.status != http.StatusBadRequest || p.location != nil || !strings.Contains(p.html, "not valid") {
		t.Errorf("a wrong key: %d to %v; want the page again saying the key is not valid", p.status, p.location)
	}
	p = c.consent(q, "", "deny")
	if p.location == nil || p.location.Query().Get("error") != "access_denied" || p.location.Query().Get("code") != "" {
		t.Errorf("deny: %d to %v; want a redirect with error=access_denied", p.status, p.location)
	}
	// The form without this browser's cookie, with a made-up token, or
	// from another origin is refused, and no code is made.
	base := url.Values{}
	for k, v := range q {
		base[k] = v
	}
	base.Set("api_key", s.Key)
	base.Set("decision", "allow")
	stranger := newClient(t, s.API)
	stranger.id = c.id
	if p := stranger.postConsent(withCSRF(base, "made-up"), nil); p.status != http.StatusForbidden || p.location != nil {
		t.Errorf("a form posted without the page's cookie: %d to %v; want 403", p.status, p.location)
	}
	page := c.get("/authorize", q)
	token := csrfField.FindStringSubmatch(page.html)[1]
	if p := c.postConsent(withCSRF(base, token), map[string]string{"Origin": "https://attacker.example"}); p.status != http.StatusForbidden {
		t.Errorf("the form posted from another origin: %d; want 403", p.status)
	}
	changed := withCSRF(base, token)
	changed.Set("redirect_uri", c.redirect)
	changed.Set("state", "another-state")
	if p := c.postConsent(changed, nil); p.status != http.StatusForbidden {
		t.Errorf("the form with a changed request: %d; want 403", p.status)
	}
	if p := c.postConsent(withCSRF(base, token), map[string]string{"Origin": s.API}); p.status != http.StatusSeeOther {
		t.Errorf("the page's own form: %d %s; want 303", p.status, p.html)
	}
}

func withCSRF(v url.Values, token string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = vs
	}
	out.Set("csrf", token)
	return out
}

func TestRefreshTokenWorksOnceAndReuseRevokesTheGrant(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API).register()
	_, refresh := c.tokens(s.Key)
	status, next := c.refresh(refresh)
	if status != 200 || next["refresh_token"] == refresh || next["expires_in"].(float64) > 3600 {
		t.Fatalf("refresh: %d %v; want 200 with a new refresh token", status, next)
	}
	access2 := next["access_token"].(string)
	if status, _, _ := callMCP(t, s.API, "Authorization", "Bearer "+access2); status != 200 {
		t.Fatalf("the refreshed access token: %d; want 200", status)
	}
	if status, body := c.refresh(refresh); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("second use of a refresh token: %d %v; want 400 invalid_grant", status, body)
	}
	if status, _, _ := callMCP(t, s.API, "Authorization", "Bearer "+access2); status != 401 {
		t.Errorf("the grant's access token after a refresh token's reuse: %d; want 401 (the grant is revoked)", status)
	}
	if status, body := c.refresh(next["refresh_token"].(string)); status != 400 || body["error"] != "invalid_grant" {
		t.Errorf("the grant's newest refresh token after the reuse: %d %v; want 400 invalid_grant", status, body)
	}
}

func TestRevocationHoldsOnEveryReplica(t *testing.T) {
	s := systemtest.Start(t)
	replica := s.StartReplica()
	c := newClient(t, s.API).register()
	access, refresh := c.tokens(s.Key)
	if status, _, _ := callMCP(t, replica, "Authorization", "Bearer "+access); status != 200 {
		t.Fatalf("the token on another replica: %d; want 200", status)
	}
	status, _ := c.postForm("/revoke", url.Values{"token": {access}, "client_id": {c.id}})
	if status != 200 {
		t.Fatalf("revoke: %d; want 200", status)
	}
	for _, base := range []string{s.API, replica} {
		if status, ch, _ := callMCP(t, base, "Authorization", "Bearer "+access); status != 401 || !strings.Contains(ch, "invalid_token") {
			t.Errorf("%s right after revocation: %d %q; want 401 invalid_token", base, status, ch)
		}
	}
	if status, body := c.refresh(refresh); status != 400 {
		t.Errorf("the revoked grant's refresh token: %d %v; want 400", status, body)
	}
	if status, _ := c.postForm("/revoke", url.Values{"token": {"ifa_unknown"}}); status != 200 {
		t.Errorf("revoking an unknown token: %d; want 200 (RFC 7009)", status)
	}
}

func TestConnectedAppsListAndRevoke(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API).register()
	access, _ := c.tokens(s.Key)
	status, _, body := s.Request("GET", "/v1/connected-apps", "", nil, map[string]string{"X-API-Key": s.Key})
	if status != 200 || !strings.Contains(string(body), `"client_name":"Test agent"`) || !strings.Contains(string(body), c.id) {
		t.Fatalf("GET /v1/connected-apps: %d %s; want the app", status, body)
	}
	id := regexpID.FindStringSubmatch(string(body))[1]
	other := s.Ledger
	otherKey, _, _ := other.CreateAccount(context.Background(), 0)
	if status, _, _ := s.Request("DELETE", "/v1/connected-apps/"+id, "", nil, map[string]string{"X-API-Key": otherKey}); status != 404 {
		t.Errorf("another key revoking the app: %d; want 404", status)
	}
	if status, _, _ := s.Request("DELETE", "/v1/connected-apps/"+id, "", nil, map[string]string{"X-API-Key": s.Key}); status != 204 {
		t.Errorf("DELETE /v1/connected-apps/{id}: %d; want 204", status)
	}
	if status, _, _ := callMCP(t, s.API, "Authorization", "Bearer "+access); status != 401 {
		t.Errorf("the app's token after its revocation in the console: %d; want 401", status)
	}
	if status, _, body := s.Request("GET", "/v1/connected-apps", "", nil, map[string]string{"X-API-Key": s.Key}); status != 200 || strings.Contains(string(body), c.id) {
		t.Errorf("the list after revocation: %d %s; want it gone", status, body)
	}
}

var regexpID = regexp.MustCompile(`"id":"([^"]+)"`)

// server.json's remote without headers is the OAuth one: filled in for
// this system, a client without a key is sent to the resource metadata,
// and with a token from the flow it lists tools.
func TestServerJSONListsTheOAuthRemote(t *testing.T) {
	raw, err := os.ReadFile("../server.json")
	if err != nil {
		t.Fatal(err)
	}
	var entry struct {
		Remotes []struct {
			Type, URL string
			Headers   []json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &entry); err != nil {
		t.Fatal(err)
	}
	var remoteURL string
	for _, r := range entry.Remotes {
		if r.Type == "streamable-http" && len(r.Headers) == 0 {
			remoteURL = r.URL
		}
	}
	if !strings.HasSuffix(remoteURL, "/mcp") {
		t.Fatalf("server.json remotes %+v: want a streamable-http remote at /mcp without headers (OAuth)", entry.Remotes)
	}
	s := systemtest.Start(t)
	base := strings.TrimSuffix(strings.Replace(strings.Replace(remoteURL, "https://", "http://", 1), "{host}", strings.TrimPrefix(s.API, "http://"), 1), "/mcp")
	status, ch, _ := callMCP(t, base, "", "")
	if status != 401 || !strings.Contains(ch, `resource_metadata="`+s.API+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("the OAuth remote without a token: %d %q; want 401 naming the resource metadata", status, ch)
	}
	access, _ := newClient(t, base).register().tokens(s.Key)
	if status, _, body := callMCP(t, base, "Authorization", "Bearer "+access); status != 200 || !strings.Contains(body, "credits_remaining") {
		t.Errorf("the OAuth remote with a token: %d %s; want the account", status, body)
	}
}
