package server

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// hookRequest is POST /v1/hooks.
type hookRequest struct {
	APIKey    string `json:"api_key"`
	TargetURL string `json:"target_url" validate:"required,http_url,max=4096"`
	Event     string `json:"event" validate:"required,oneof=job.completed job.failed job.finished batch.finished"`
}

// hookView is a subscription as its owner sees it; the secret verifies its
// deliveries.
type hookView struct {
	*connector.Hook
	Secret string `json:"secret"`
}

func (s *Server) viewHook(h *connector.Hook) hookView {
	return hookView{Hook: h, Secret: s.cfg.Keyring.WebhookSecret("hook", h.ID)}
}

// createHook is POST /v1/hooks: 201 with Location and the secret.
func (s *Server) createHook(c echo.Context) error {
	if key := headerKey(c); key != "" {
		if err := s.authenticate(c, key); err != nil {
			return err
		}
	}
	var in hookRequest
	if err := readJSON(c, &in); err != nil {
		return err
	}
	if in.Event == "" {
		in.Event = connector.EventJobFinished
	}
	if err := s.check(&in); err != nil {
		return err
	}
	key, err := requestKey(c, in.APIKey)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.cfg.CheckURL(ctx, "target_url", in.TargetURL); err != nil {
		return err
	}
	if err := s.authenticate(c, key); err != nil {
		return err
	}
	h := &connector.Hook{ID: uuid.NewString(), TargetURL: in.TargetURL, Event: in.Event, CreatedAt: s.cfg.Now().UTC(), Owner: s.owner(key)}
	if err := s.cfg.Hooks.CreateHook(ctx, h); err != nil {
		return err
	}
	s.logger(c).Info("hook created", "hook_id", h.ID, "event", h.Event)
	c.Response().Header().Set(echo.HeaderLocation, s.cfg.PublicURL+"/v1/hooks/"+h.ID)
	return c.JSON(http.StatusCreated, s.viewHook(h))
}

// listHooks is GET /v1/hooks.
func (s *Server) listHooks(c echo.Context) error {
	hooks, err := s.cfg.Hooks.ListHooks(c.Request().Context(), s.owner(apiKey(c)))
	if err != nil {
		return err
	}
	out := struct {
		Hooks []hookView `json:"hooks"`
	}{Hooks: make([]hookView, 0, len(hooks))}
	for _, h := range hooks {
		out.Hooks = append(out.Hooks, s.viewHook(h))
	}
	return c.JSON(http.StatusOK, out)
}

// getHook is GET /v1/hooks/:id.
func (s *Server) getHook(c echo.Context) error {
	h, err := s.cfg.Hooks.GetHook(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if h.Owner != s.owner(apiKey(c)) {
		return connector.Errorf(connector.ENOTFOUND, "hook %s not found", c.Param("id"))
	}
	return c.JSON(http.StatusOK, s.viewHook(h))
}

// deleteHook is DELETE /v1/hooks/:id (Power Automate calls the Location).
func (s *Server) deleteHook(c echo.Context) error {
	if err := s.cfg.Hooks.DeleteHook(c.Request().Context(), s.owner(apiKey(c)), c.Param("id")); err != nil {
		return err
	}
	s.logger(c).Info("hook deleted", "hook_id", c.Param("id"))
	return c.NoContent(http.StatusNoContent)
}

// readJSON checks the content type and decodes a small JSON body.
func readJSON(c echo.Context, v any) error {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if !isJSON(ct) {
		return connector.Errorf(connector.EMEDIATYPE, "Content-Type must be application/json (got %q)", ct)
	}
	if err := limitBody(c, 64<<10); err != nil {
		return connector.Errorf(connector.ETOOLARGE, "request body too large")
	}
	return decodeJSON(c.Request().Body, v)
}
