package server

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/oauth"
)

// mcpChallenge is the WWW-Authenticate of a refused /mcp request (RFC
// 6750): MCP clients read it to learn how to authenticate. It names the
// protected resource metadata (RFC 9728) when the OAuth server runs, and
// carries error="invalid_token" only when credentials were sent.
func (s *Server) mcpChallenge(sent bool) string {
	ch := `Bearer realm="imgflow"`
	if sent {
		ch += `, error="invalid_token", error_description="the API key or access token is not valid"`
	}
	if s.cfg.OAuth != nil {
		ch += `, resource_metadata=` + strconv.Quote(s.cfg.OAuth.ResourceMetadataURL())
	}
	return ch
}

var errBadAccessToken = &connector.Error{
	Code:    connector.EUNAUTHORIZED,
	Message: "the access token is unknown, expired or revoked: authorize the app again",
}

// requireMCPKey is requireKey for /mcp: a missing or unknown key is
// refused before the body is read, with the challenge MCP clients expect.
// An OAuth access token (oauth.IsAccessToken) is resolved to the key it
// acts as, in one Redis read and with no cache here, and the request goes
// on as if that key had been sent: everything behind it sees the key.
func (s *Server) requireMCPKey(next echo.HandlerFunc) echo.HandlerFunc {
	check := s.requireKey(next)
	return func(c echo.Context) error {
		sent := headerKey(c)
		if s.cfg.OAuth != nil && oauth.IsAccessToken(sent) {
			key, ok, err := s.cfg.OAuth.ResolveToken(c.Request().Context(), sent)
			if err != nil {
				return err
			}
			if !ok {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, s.mcpChallenge(true))
				return errBadAccessToken
			}
			h := c.Request().Header
			h.Del("X-API-Key")
			h.Set(echo.HeaderAuthorization, "Bearer "+key)
		}
		err := check(c)
		if isCode(err, connector.EUNAUTHORIZED) {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, s.mcpChallenge(sent != ""))
		}
		return err
	}
}

// largeBodySlot holds a large-body slot while the handler reads the body
// (the MCP upload URLs), as creating a job with an upload does. The URL's
// signed token stands for the key (an upload URL carries none): the slot
// is the URL's, and the handler refuses a bad token before reading a byte.
func (s *Server) largeBodySlot(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		release, err := s.bodies.acquire(c, "upload:"+c.Param("slot"))
		if err != nil {
			return err
		}
		defer release()
		return next(c)
	}
}
