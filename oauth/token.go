package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"time"
)

// token is the token endpoint (RFC 6749 section 3.2, OAuth 2.1): an
// authorization code with its PKCE verifier, or a refresh token, for a
// new access token (AccessTTL) and a new refresh token (RefreshTTL).
// Clients are public: client_id in the body identifies them.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	f := r.PostForm
	clientID := f.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok && clientID == "" {
		clientID = id
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		s.redeemCode(w, r, clientID)
	case "refresh_token":
		s.refresh(w, r, clientID)
	case "":
		oauthError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// A PKCE verifier (RFC 7636 section 4.1): 43 to 128 unreserved characters.
var pkceVerifier = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// redeemCode exchanges a code, once: the code is deleted as it is read, so
// a second exchange (or a replica racing the first) finds nothing.
func (s *Server) redeemCode(w http.ResponseWriter, r *http.Request, clientID string) {
	f := r.PostForm
	code, verifier := f.Get("code"), f.Get("code_verifier")
	if code == "" || verifier == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "code and code_verifier are required")
		return
	}
	rec, ok, err := s.cfg.Store.TakeCode(r.Context(), hashOf(code))
	if err != nil {
		s.serverError(w, err)
		return
	}
	now := s.cfg.Now()
	switch {
	case !ok || now.After(rec.ExpiresAt):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code is unknown, expired or already used")
		return
	case clientID != rec.ClientID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		return
	case f.Has("redirect_uri") && f.Get("redirect_uri") != rec.RedirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
		return
	case !pkceVerifier.MatchString(verifier) || !s256Matches(verifier, rec.Challenge):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	}
	if aud, ok := s.audience(f.Get("resource")); !ok || aud != rec.Resource {
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource must be "+rec.Resource)
		return
	}
	g := &Grant{ID: newID("ifg_"), Owner: rec.Owner, ClientID: rec.ClientID, ClientName: rec.ClientName, Resource: rec.Resource,
		Scope: rec.Scope, SealedKey: rec.SealedKey, CreatedAt: now, RefreshedAt: now}
	if err := s.cfg.Store.PutGrant(r.Context(), g, RefreshTTL); err != nil {
		s.serverError(w, err)
		return
	}
	s.cfg.Logger.Info("oauth: grant made", "grant", g.ID, "client_id", g.ClientID, "owner", g.Owner)
	s.issue(w, r.Context(), g)
}

// s256Matches checks a PKCE verifier against its S256 challenge.
func s256Matches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

// refresh rotates a refresh token: it works once and answers a new pair;
// a token presented again means two parties hold it, so the whole grant
// (every token of it) is revoked.
func (s *Server) refresh(w http.ResponseWriter, r *http.Request, clientID string) {
	f := r.PostForm
	tok := f.Get("refresh_token")
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "refresh_token is required")
		return
	}
	use, rec, grantID, err := s.cfg.Store.UseRefresh(r.Context(), hashOf(tok), RefreshTTL)
	if err != nil {
		s.serverError(w, err)
		return
	}
	if use == RefreshUnknown {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is unknown, expired or revoked")
		return
	}
	g, ok, err := s.cfg.Store.Grant(r.Context(), grantID)
	if err != nil {
		s.serverError(w, err)
		return
	}
	stolen := use == RefreshReused || rec.ClientID != clientID
	if stolen || !ok || s.cfg.Now().After(rec.ExpiresAt) {
		if ok && stolen {
			if _, err := s.cfg.Store.RevokeGrant(r.Context(), g); err != nil {
				s.serverError(w, err)
				return
			}
			s.cfg.Logger.Warn("oauth: refresh token used twice or by another client; grant revoked", "grant", g.ID, "client_id", g.ClientID)
		}
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was already used, or is not this client's; the app must be authorized again")
		return
	}
	if aud, ok := s.audience(f.Get("resource")); !ok || aud != g.Resource {
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource must be "+g.Resource)
		return
	}
	g.RefreshedAt = s.cfg.Now()
	s.issue(w, r.Context(), g)
}

// issue answers a new access token and refresh token for g.
func (s *Server) issue(w http.ResponseWriter, ctx context.Context, g *Grant) {
	now := s.cfg.Now()
	access, refresh := newSecret(AccessPrefix), newSecret(RefreshPrefix)
	a := &Access{GrantID: g.ID, ClientID: g.ClientID, Owner: g.Owner, Resource: g.Resource, SealedKey: g.SealedKey,
		ExpiresAt: now.Add(AccessTTL)}
	rt := &Refresh{GrantID: g.ID, ClientID: g.ClientID, ExpiresAt: now.Add(RefreshTTL)}
	if err := s.cfg.Store.PutTokens(ctx, g, hashOf(access), a, hashOf(refresh), rt); errors.Is(err, ErrGrantRevoked) {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the grant was revoked; the app must be authorized again")
		return
	} else if err != nil {
		s.serverError(w, err)
		return
	}
	out := map[string]any{
		"access_token":  access,
		"token_type":    "Bearer",
		"expires_in":    int(AccessTTL / time.Second),
		"refresh_token": refresh,
	}
	if g.Scope != "" {
		out["scope"] = g.Scope
	}
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, out)
}
