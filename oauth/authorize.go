package oauth

import (
	"context"
	_ "embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

//go:embed consent.html
var consentHTML string

var consentPage = template.Must(template.New("consent").Parse(consentHTML))

// authRequest is an authorization request's parameters (RFC 6749 section
// 4.1.1, RFC 7636, RFC 8707), carried from the page to its form as hidden
// fields.
type authRequest struct {
	ResponseType, ClientID, RedirectURI, State, Challenge, ChallengeMethod, Resource, Scope string
}

func authRequestOf(v url.Values) authRequest {
	return authRequest{
		ResponseType: v.Get("response_type"), ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"),
		State: v.Get("state"), Challenge: v.Get("code_challenge"), ChallengeMethod: v.Get("code_challenge_method"),
		Resource: v.Get("resource"), Scope: v.Get("scope"),
	}
}

func (a authRequest) fields() []field {
	return []field{
		{"response_type", a.ResponseType}, {"client_id", a.ClientID}, {"redirect_uri", a.RedirectURI}, {"state", a.State},
		{"code_challenge", a.Challenge}, {"code_challenge_method", a.ChallengeMethod}, {"resource", a.Resource}, {"scope", a.Scope},
	}
}

type field struct{ Name, Value string }

// A PKCE challenge is the base64url SHA-256 of the verifier: 43 characters.
var s256Challenge = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// refusal is an authorization request refused: redirect says whether the
// answer goes back to the client (a known client and redirect URI) or is
// shown on the page.
type refusal struct {
	redirect    bool
	code, about string
}

// check validates a request in the order RFC 6749 section 4.1.2.1 asks:
// client and redirect URI first (never redirect to an unchecked URI),
// then the rest, answered at the redirect URI. It returns the client and
// the resource the token will be bound to.
func (s *Server) check(ctx context.Context, a *authRequest) (*Client, string, *refusal, error) {
	if a.ClientID == "" {
		return nil, "", &refusal{about: "The request names no client (client_id is missing)."}, nil
	}
	c, err := s.client(ctx, a.ClientID)
	var de *documentError
	switch {
	case errors.Is(err, errUnknownClient):
		return nil, "", &refusal{about: "This app is not registered here (unknown client_id)."}, nil
	case errors.As(err, &de):
		return nil, "", &refusal{about: "This app's client metadata document cannot be used: " + de.reason + "."}, nil
	case err != nil:
		return nil, "", nil, err
	}
	if a.RedirectURI == "" && len(c.RedirectURIs) == 1 {
		a.RedirectURI = c.RedirectURIs[0]
	}
	if !c.allowsRedirect(a.RedirectURI) {
		return nil, "", &refusal{about: "The address this app asks to return to is not one it registered (redirect_uri does not match)."}, nil
	}
	if a.ResponseType != "code" {
		return c, "", &refusal{redirect: true, code: "unsupported_response_type", about: "response_type must be code"}, nil
	}
	if a.Challenge == "" {
		return c, "", &refusal{redirect: true, code: "invalid_request", about: "PKCE is required: send code_challenge with code_challenge_method=S256"}, nil
	}
	if a.ChallengeMethod != "S256" {
		return c, "", &refusal{redirect: true, code: "invalid_request", about: "code_challenge_method must be S256 (plain is not accepted)"}, nil
	}
	if !s256Challenge.MatchString(a.Challenge) {
		return c, "", &refusal{redirect: true, code: "invalid_request", about: "code_challenge must be the base64url SHA-256 of the verifier (43 characters)"}, nil
	}
	resource, ok := s.audience(a.Resource)
	if !ok {
		return c, "", &refusal{redirect: true, code: "invalid_target", about: "resource must be " + s.resource}, nil
	}
	return c, resource, nil, nil
}

// audience is the resource a token is bound to: this server's /mcp. A
// request naming the server itself (the root metadata's resource) or
// nothing gets /mcp too; anything else is refused.
func (s *Server) audience(resource string) (string, bool) {
	switch strings.TrimRight(resource, "/") {
	case "", s.resource, s.issuer:
		return s.resource, true
	}
	return "", false
}

// consentView is what the consent page shows.
type consentView struct {
	Problem, ClientName, ClientHost, RedirectHost, Action, CSRF, KeyError string
	Hidden                                                                []field
}

// authorizePage is GET /authorize: the consent page for a valid request,
// a refusal otherwise.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	a := authRequestOf(r.URL.Query())
	c, _, ref, err := s.check(r.Context(), &a)
	if err != nil {
		s.pageError(w, err)
		return
	}
	if ref != nil {
		s.refuse(w, r, &a, ref)
		return
	}
	nonce := newSecret("")
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: nonce, Path: s.endpointPath("authorize"), MaxAge: 1800,
		HttpOnly: true, Secure: strings.HasPrefix(s.issuer, "https://"), SameSite: http.SameSiteStrictMode})
	s.showConsent(w, http.StatusOK, c, &a, nonce, "")
}

const csrfCookie = "imgflow_consent"

func (s *Server) showConsent(w http.ResponseWriter, status int, c *Client, a *authRequest, nonce, keyError string) {
	v := consentView{ClientName: c.Name, RedirectHost: hostOf(a.RedirectURI), Action: s.endpointPath("authorize"),
		CSRF: s.csrfToken(nonce, a), KeyError: keyError, Hidden: a.fields()}
	if strings.HasPrefix(c.ID, "https://") {
		v.ClientHost = hostOf(c.ID)
	}
	s.render(w, status, v)
}

// csrfToken binds the form to the browser that loaded it (the cookie's
// nonce) and to the request it shows: a page elsewhere can make neither.
func (s *Server) csrfToken(nonce string, a *authRequest) string {
	return s.cfg.Keyring.FormToken("oauth-consent", append([]string{nonce}, valuesOf(a)...)...)
}

func (s *Server) render(w http.ResponseWriter, status int, v consentView) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// No form-action: the answer to the form redirects to the client,
	// which a form-action source list would block.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: the form's POST must carry its Origin
	// (csrfOK), which no-referrer turns into "null".
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	if err := consentPage.Execute(w, v); err != nil {
		s.cfg.Logger.Warn("oauth: consent page not written", "err", err)
	}
}

// refuse answers a refused request: back to the client with error, state
// and iss when the redirect URI is known good, else a page.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, a *authRequest, ref *refusal) {
	if ref.redirect {
		s.redirect(w, r, a.RedirectURI, url.Values{"error": {ref.code}, "error_description": {ref.about}, "state": {a.State}})
		return
	}
	s.render(w, http.StatusBadRequest, consentView{Problem: ref.about})
}

// redirect sends the browser back to the client with params, the issuer
// (RFC 9207) and the request's state added to the redirect URI's query.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, redirectURI string, params url.Values) {
	u, err := url.Parse(redirectURI)
	if err != nil {
		s.render(w, http.StatusBadRequest, consentView{Problem: "The app's redirect_uri is not a URL."})
		return
	}
	q := u.Query()
	for k, vs := range params {
		if len(vs) > 0 && vs[0] != "" {
			q.Set(k, vs[0])
		}
	}
	q.Set("iss", s.issuer)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// pageError answers a failure of the server's own on the page: 503.
func (s *Server) pageError(w http.ResponseWriter, err error) {
	s.cfg.Logger.Error("oauth: authorization failed", "err", err)
	w.Header().Set("Retry-After", "5")
	s.render(w, http.StatusServiceUnavailable, consentView{Problem: "imgflow cannot answer right now. Try again in a few seconds."})
}

// authorizeConsent is POST /authorize: the form's answer. The request is
// checked again (the form is the browser's), then its CSRF token; "deny"
// goes back with access_denied; "allow" checks the key as the API does and
// goes back with a code.
func (s *Server) authorizeConsent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.render(w, http.StatusBadRequest, consentView{Problem: "The form could not be read."})
		return
	}
	a := authRequestOf(r.PostForm)
	c, resource, ref, err := s.check(r.Context(), &a)
	if err != nil {
		s.pageError(w, err)
		return
	}
	if ref != nil {
		s.refuse(w, r, &a, ref)
		return
	}
	nonce, ok := s.csrfOK(r, &a)
	if !ok {
		s.render(w, http.StatusForbidden, consentView{Problem: "This form did not come from this page (its security token does not match). Start connecting again from the app."})
		return
	}
	if r.PostForm.Get("decision") != "allow" {
		s.redirect(w, r, a.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the user denied access"}, "state": {a.State}})
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("api_key"))
	if key == "" {
		s.showConsent(w, http.StatusBadRequest, c, &a, nonce, "Enter your imgflow API key.")
		return
	}
	if err := s.cfg.CheckKey(r.Context(), key); err != nil {
		switch connector.ErrorCodeOf(err) {
		case connector.ENOCREDITS:
			// A key without credits still connects: reads cost nothing.
		case connector.EUNAUTHORIZED:
			s.showConsent(w, http.StatusBadRequest, c, &a, nonce, "This API key is not valid. Check it and try again.")
			return
		case connector.EUPSTREAMDOWN:
			s.showConsent(w, http.StatusServiceUnavailable, c, &a, nonce, "imgflow cannot check keys right now. Try again in a minute.")
			return
		default:
			s.pageError(w, err)
			return
		}
	}
	code := newSecret("")
	rec := &Code{ClientID: c.ID, ClientName: c.Name, RedirectURI: a.RedirectURI, Challenge: a.Challenge, Resource: resource,
		Scope: a.Scope, Owner: s.cfg.Keyring.KeyHash(key), SealedKey: s.cfg.Keyring.Seal(key), ExpiresAt: s.cfg.Now().Add(CodeTTL)}
	if err := s.cfg.Store.PutCode(r.Context(), hashOf(code), rec); err != nil {
		s.pageError(w, err)
		return
	}
	s.cfg.Logger.Info("oauth: access allowed", "client_id", c.ID, "owner", rec.Owner)
	s.redirect(w, r, a.RedirectURI, url.Values{"code": {code}, "state": {a.State}})
}

// csrfOK checks the form's token against the cookie's nonce and, when the
// browser sends one, the Origin: the form must have been loaded from this
// server, in this browser, for this very request.
func (s *Server) csrfOK(r *http.Request, a *authRequest) (string, bool) {
	if o := r.Header.Get("Origin"); o != "" && o != originOf(s.issuer) {
		return "", false
	}
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return "", false
	}
	return ck.Value, s.cfg.Keyring.VerifyFormToken(r.PostForm.Get("csrf"), "oauth-consent", append([]string{ck.Value}, valuesOf(a)...)...)
}

func valuesOf(a *authRequest) []string {
	var out []string
	for _, f := range a.fields() {
		out = append(out, f.Value)
	}
	return out
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}
