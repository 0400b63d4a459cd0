package oauth

import (
	"encoding/json"
	"net/http"
)

// resourceMetadata serves RFC 9728 protected resource metadata for
// resource: the root document names the server itself, the /mcp one the
// MCP endpoint; both name this server as the authorization server.
func (s *Server) resourceMetadata(resource string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"resource":                 resource,
			"authorization_servers":    []string{s.issuer},
			"bearer_methods_supported": []string{"header"},
			"resource_name":            "imgflow MCP server",
			"resource_documentation":   s.issuer + "/",
		})
	}
}

// serverMetadata serves RFC 8414 authorization server metadata.
func (s *Server) serverMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.issuer,
		"authorization_endpoint":                         s.endpoint("authorize"),
		"token_endpoint":                                 s.endpoint("token"),
		"registration_endpoint":                          s.endpoint("register"),
		"revocation_endpoint":                            s.endpoint("revoke"),
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
		"service_documentation":                          s.issuer + "/",
	})
}

// writeJSON answers v as JSON, never cached (tokens, codes, metadata that
// follows the deployment).
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// oauthError is an error answer of the token, registration and
// revocation endpoints (RFC 6749 section 5.2, RFC 7591 section 3.2.2).
func oauthError(w http.ResponseWriter, status int, code, description string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer error="`+code+`"`)
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}
