package oauth

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// register is RFC 7591 dynamic client registration, for public clients
// only: no secret is issued and token_endpoint_auth_method is "none"
// whatever the request asked. The redirect URIs are checked here (https,
// or http on loopback) and matched exactly at /authorize.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
		ClientURI    string   `json:"client_uri"`
		GrantTypes   []string `json:"grant_types"`
		Scope        string   `json:"scope"`
	}
	now := s.cfg.Now()
	count, err := s.cfg.Store.CountRegistration(r.Context(), now)
	if err != nil {
		s.serverError(w, err)
		return
	}
	if count > int64(s.cfg.RegistrationsPerMinute) {
		w.Header().Set("Retry-After", strconv.Itoa(60-now.Second()))
		oauthError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many client registrations this minute; try again after Retry-After seconds")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body cannot be read")
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be a JSON object of client metadata")
		return
	}
	if err := checkRedirectURIs(req.RedirectURIs); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
		return
	}
	if len(req.ClientURI) > maxURILength {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "client_uri is longer than 2,048 characters")
		return
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "grant_types may hold authorization_code and refresh_token only")
			return
		}
	}
	c := &Client{ID: newID(clientPrefix), RedirectURIs: req.RedirectURIs, URI: req.ClientURI, CreatedAt: s.cfg.Now()}
	c.Name = clientName(req.ClientName, c.ID)
	if err := s.cfg.Store.PutClient(r.Context(), c, UnusedClientTTL); err != nil {
		s.serverError(w, err)
		return
	}
	s.cfg.Logger.Info("oauth: client registered", "client_id", c.ID, "client_name", c.Name)
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.CreatedAt.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}

// serverError answers a failure of the server's own (Redis down): 503
// temporarily_unavailable, logged.
func (s *Server) serverError(w http.ResponseWriter, err error) {
	s.cfg.Logger.Error("oauth: request failed", "err", err)
	w.Header().Set("Retry-After", "5")
	oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "try again in a few seconds")
}
