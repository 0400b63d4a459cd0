package server

import (
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// mcpChallenge is the WWW-Authenticate of a refused /mcp request: MCP
// clients read it to learn how to authenticate (here: the API key as a
// bearer token).
const mcpChallenge = `Bearer realm="imgflow", error="invalid_token", error_description="send your API key as Authorization: Bearer KEY or X-API-Key"`

// requireMCPKey is requireKey for /mcp: a missing or unknown key is
// refused before the body is read, with the challenge MCP clients expect.
func (s *Server) requireMCPKey(next echo.HandlerFunc) echo.HandlerFunc {
	check := s.requireKey(next)
	return func(c echo.Context) error {
		err := check(c)
		if isCode(err, connector.EUNAUTHORIZED) {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, mcpChallenge)
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
