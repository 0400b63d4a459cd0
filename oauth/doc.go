// Package oauth is imgflow's OAuth 2.1 authorization server for MCP
// clients that cannot send an API key (chat apps' connectors): the user
// pastes their API key once on a consent page, and the client gets
// short-lived access tokens that act as that key at /mcp. Everything
// behind the token check (credits, limits, idempotency, fairness) sees
// the key, unchanged.
//
// It serves the protected resource metadata (RFC 9728), the authorization
// server metadata (RFC 8414), /authorize (the consent page: PKCE S256
// only, exact redirect URIs, RFC 8707 resource bound to /mcp, the issuer
// in the answer per RFC 9207, a CSRF token on the form), /token (codes
// once, rotating refresh tokens whose reuse revokes the grant), /register
// (RFC 7591, public clients), client ID metadata documents (an https
// client_id fetched through the SSRF guard, bounded and cached) and
// /revoke (RFC 7009). Its state lives in Redis (store.go), so any replica
// answers any step and a revocation holds everywhere at the next request.
//
// serve and dev mount it beside /mcp (server.Config.OAuth); the server's
// token check calls Server.ResolveToken. Tests: go test ./oauth (miniredis);
// the TypeScript SDK's whole flow in headless Chromium runs in .ci/mcp.sh.
package oauth
