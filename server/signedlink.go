package server

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// signedLink is a route that answers a signed link (?token=) as well as the
// key: a job's file, a batch's archive. verify checks a token for the id
// in the path; name is what the link is called in its 404.
type signedLink struct {
	name   string
	verify func(id, token string, now time.Time) bool
}

// byTokenOrKey reads what the request reaches: with ?token= the token must
// verify for the path's id, and byID reads it (the link is the
// permission); otherwise the key in a header is checked and owned reads it
// for that key (another key's is a 404).
func byTokenOrKey[T any](s *Server, c echo.Context, link signedLink, byID func(context.Context, string) (T, error), owned func(echo.Context) (T, error)) (T, error) {
	var zero T
	id := c.Param("id")
	if token := c.QueryParam("token"); token != "" {
		if !link.verify(id, token, s.cfg.Now()) {
			return zero, connector.Errorf(connector.ENOTFOUND, "this %s link is invalid or has expired", link.name)
		}
		return byID(c.Request().Context(), id)
	}
	key := headerKey(c)
	if key == "" {
		return zero, errNoKey
	}
	if err := s.authenticate(c, key); err != nil {
		return zero, err
	}
	c.Set(ctxAPIKey, key)
	return owned(c)
}
