package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// mountOAuth serves the authorization server's routes (package oauth) and
// the key's connected apps: the grants OAuth clients hold for it, which
// the console lists and revokes.
func (s *Server) mountOAuth(e *echo.Echo) {
	h := echo.WrapHandler(s.cfg.OAuth.Handler())
	for _, rt := range s.cfg.OAuth.Routes() {
		e.Add(rt[0], rt[1], h)
	}
	e.GET("/v1/connected-apps", s.listConnectedApps, s.requireKey)
	e.DELETE("/v1/connected-apps/:id", s.revokeConnectedApp, s.requireKey)
}

type connectedApp struct {
	ID          string    `json:"id"`
	ClientID    string    `json:"client_id"`
	ClientName  string    `json:"client_name"`
	CreatedAt   time.Time `json:"created_at"`
	RefreshedAt time.Time `json:"refreshed_at"`
}

// listConnectedApps is GET /v1/connected-apps: the apps that act as the
// key through OAuth, newest first.
func (s *Server) listConnectedApps(c echo.Context) error {
	apps, err := s.cfg.OAuth.Apps(c.Request().Context(), s.owner(apiKey(c)))
	if err != nil {
		return err
	}
	out := make([]connectedApp, len(apps))
	for i, a := range apps {
		out[i] = connectedApp{ID: a.ID, ClientID: a.ClientID, ClientName: a.ClientName, CreatedAt: a.CreatedAt, RefreshedAt: a.RefreshedAt}
	}
	return c.JSON(http.StatusOK, map[string]any{"apps": out})
}

// revokeConnectedApp is DELETE /v1/connected-apps/{id}: the app's tokens
// stop working on every replica at their next request.
func (s *Server) revokeConnectedApp(c echo.Context) error {
	ok, err := s.cfg.OAuth.RevokeApp(c.Request().Context(), s.owner(apiKey(c)), c.Param("id"))
	if err != nil {
		return err
	}
	if !ok {
		return connector.Errorf(connector.ENOTFOUND, "no connected app %q for this key", c.Param("id"))
	}
	return c.NoContent(http.StatusNoContent)
}
