package server

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// hookRequest is POST /v1/hooks.
type hookRequest struct {
	APIKey    string `json:"api_key"`
	TargetURL string `json:"target_url" validate:"required,http_url,max=4096"`
	Event     string `json:"event" validate:"required,oneof=job.completed job.failed job.finished hook.disabled account.credits_low batch.finished"`
	// Threshold is the balance at or below which account.credits_low
	// fires (default 50); only with that event.
	Threshold *int64 `json:"threshold" validate:"omitempty,min=0,max=1000000000"`
}

// hookView is a subscription as its owner sees it; the secret verifies its
// deliveries. After a rotation, PreviousSecretExpiresAt says until when the
// previous secret signs too.
type hookView struct {
	*connector.Hook
	Secret                  string     `json:"secret"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at,omitempty"`
}

func (s *Server) viewHook(h *connector.Hook) hookView {
	v := hookView{Hook: h, Secret: s.cfg.Keyring.WebhookSecretVersion("hook", h.ID, h.SecretVersion)}
	if p := h.PreviousSecretUntil; p != nil && s.cfg.Now().Before(*p) {
		v.PreviousSecretExpiresAt = p
	}
	return v
}

// createHook is POST /v1/hooks: 201 with Location and the secret; 409
// too_many_hooks once the key has MaxHooksPerKey.
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
	if in.Threshold != nil && in.Event != connector.EventCreditsLow {
		return &connector.Error{Code: connector.EINVALID, Message: "threshold goes only with event account.credits_low",
			Details: []connector.FieldError{{Field: "threshold", Message: "only for account.credits_low"}}}
	}
	if in.Event == connector.EventCreditsLow && in.Threshold == nil {
		t := int64(connector.DefaultCreditsThreshold)
		in.Threshold = &t
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
	h := &connector.Hook{ID: uuid.NewString(), TargetURL: in.TargetURL, Event: in.Event, Threshold: in.Threshold,
		CreatedAt: s.cfg.Now().UTC(), Owner: s.owner(key)}
	if err := s.cfg.Hooks.CreateLimited(ctx, h, s.cfg.MaxHooksPerKey); err != nil {
		return err
	}
	s.logger(c).Info("hook created", "hook_id", h.ID, "event", h.Event)
	c.Response().Header().Set(echo.HeaderLocation, s.cfg.PublicURL+"/v1/hooks/"+h.ID)
	return c.JSON(http.StatusCreated, s.viewHook(h))
}

// hookList is the JSON of GET /v1/hooks.
type hookList struct {
	Hooks      []hookView `json:"hooks"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// listHooks is GET /v1/hooks: the key's hooks, oldest first, paged like
// /v1/jobs (limit up to 100, cursor).
func (s *Server) listHooks(c echo.Context) error {
	limit, err := pageLimit(c, 100, 100)
	if err != nil {
		return err
	}
	after, err := decodeHookCursor(c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	hooks, err := s.cfg.Hooks.List(c.Request().Context(), s.owner(apiKey(c)))
	if err != nil {
		return err
	}
	if after != nil {
		// Hooks are listed by creation, then id: the page starts after the
		// cursor's place, which stays put when that hook is deleted.
		i, _ := slices.BinarySearchFunc(hooks, after, compareHooks)
		for i < len(hooks) && compareHooks(hooks[i], after) <= 0 {
			i++
		}
		hooks = hooks[i:]
	}
	out := hookList{Hooks: make([]hookView, 0, min(len(hooks), limit))}
	for _, h := range hooks {
		if len(out.Hooks) == limit {
			out.NextCursor = encodeHookCursor(out.Hooks[limit-1].Hook)
			break
		}
		out.Hooks = append(out.Hooks, s.viewHook(h))
	}
	return c.JSON(http.StatusOK, out)
}

func compareHooks(a, b *connector.Hook) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

func encodeHookCursor(h *connector.Hook) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(h.CreatedAt.UnixNano(), 10) + "." + h.ID))
}

// decodeHookCursor is the hook a page starts after, nil for the first.
func decodeHookCursor(c string) (*connector.Hook, error) {
	if c == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	ns, id, ok := strings.Cut(string(raw), ".")
	n, perr := strconv.ParseInt(ns, 10, 64)
	if err != nil || !ok || perr != nil {
		return nil, fieldError("cursor", "is not one this API gave: use next_cursor of the previous page")
	}
	return &connector.Hook{ID: id, CreatedAt: time.Unix(0, n)}, nil
}

// getHook is GET /v1/hooks/:id.
func (s *Server) getHook(c echo.Context) error {
	h, err := s.ownedHook(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.viewHook(h))
}

// ownedHook is the :id hook of the request's key, or ENOTFOUND.
func (s *Server) ownedHook(c echo.Context) (*connector.Hook, error) {
	h, err := s.cfg.Hooks.Get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return nil, err
	}
	if h.Owner != s.owner(apiKey(c)) {
		return nil, connector.Errorf(connector.ENOTFOUND, "hook %s not found", c.Param("id"))
	}
	return h, nil
}

// deleteHook is DELETE /v1/hooks/:id (Power Automate calls the Location).
func (s *Server) deleteHook(c echo.Context) error {
	if err := s.cfg.Hooks.Delete(c.Request().Context(), s.owner(apiKey(c)), c.Param("id")); err != nil {
		return err
	}
	s.logger(c).Info("hook deleted", "hook_id", c.Param("id"))
	return c.NoContent(http.StatusNoContent)
}

// enableHook is POST /v1/hooks/:id/enable: a disabled hook gets events
// again, its count of failures started afresh.
func (s *Server) enableHook(c echo.Context) error {
	h, err := s.cfg.Hooks.Enable(c.Request().Context(), s.owner(apiKey(c)), c.Param("id"))
	if err != nil {
		return err
	}
	s.logger(c).Info("hook enabled", "hook_id", h.ID)
	return c.JSON(http.StatusOK, s.viewHook(h))
}

// rotateHookSecret is POST /v1/hooks/:id/rotate-secret: the answer holds
// the new secret; for SecretOverlap every delivery carries the previous
// secret's signature as well, so receivers can switch without a gap.
func (s *Server) rotateHookSecret(c echo.Context) error {
	h, err := s.cfg.Hooks.RotateSecret(c.Request().Context(), s.owner(apiKey(c)), c.Param("id"), s.cfg.Now(), s.cfg.SecretOverlap)
	if err != nil {
		return err
	}
	s.logger(c).Info("hook secret rotated", "hook_id", h.ID, "secret_version", h.SecretVersion)
	return c.JSON(http.StatusOK, s.viewHook(h))
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
