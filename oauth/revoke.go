package oauth

import (
	"net/http"
	"strings"
)

// revoke is RFC 7009 token revocation: an access or a refresh token ends
// its whole grant (every token of it), so an app that signs out is
// disconnected. Unknown tokens, and tokens of another client, answer 200
// too, as the RFC asks; they revoke nothing.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	tok, clientID := r.PostForm.Get("token"), r.PostForm.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok && clientID == "" {
		clientID = id
	}
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "token is required")
		return
	}
	ctx := r.Context()
	var grantID, owner string
	switch {
	case strings.HasPrefix(tok, AccessPrefix):
		a, ok, err := s.cfg.Store.Access(ctx, hashOf(tok))
		if err != nil {
			s.serverError(w, err)
			return
		}
		if ok && (clientID == "" || clientID == a.ClientID) {
			grantID, owner = a.GrantID, a.Owner
		}
	case strings.HasPrefix(tok, RefreshPrefix):
		rt, ok, err := s.cfg.Store.Refresh(ctx, hashOf(tok))
		if err != nil {
			s.serverError(w, err)
			return
		}
		if ok && (clientID == "" || clientID == rt.ClientID) {
			grantID = rt.GrantID
		}
	}
	if grantID != "" {
		g, ok, err := s.cfg.Store.Grant(ctx, grantID)
		if err != nil {
			s.serverError(w, err)
			return
		}
		if !ok && owner != "" {
			g, ok = &Grant{ID: grantID, Owner: owner}, true
		}
		if ok {
			if _, err := s.cfg.Store.RevokeGrant(ctx, g); err != nil {
				s.serverError(w, err)
				return
			}
			s.cfg.Logger.Info("oauth: grant revoked by its client", "grant", grantID, "client_id", g.ClientID)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
