package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/webhook"
)

// Operating hooks, beyond subscribing: send a test event now, re-send what
// failed since a time, read every delivery of the key across jobs, rotate
// the callback secret. Enabling and rotating a hook's secret are in
// hooks.go.

// HookSender posts one signed event (*webhook.Sender implements it).
type HookSender interface {
	Send(ctx context.Context, targetURL string, secrets []string, msgID string, body []byte) webhook.Result
}

// hookTestData is the data of a hook.test event.
type hookTestData struct {
	HookID  string `json:"hook_id"`
	Message string `json:"message"`
}

// testAnswer is the JSON of POST /v1/hooks/{id}/test: the one attempt.
type testAnswer struct {
	DeliveryID string                   `json:"delivery_id"`
	MessageID  string                   `json:"message_id"`
	Event      string                   `json:"event"`
	Target     string                   `json:"target"`
	Status     connector.DeliveryStatus `json:"status"`
	StatusCode int                      `json:"status_code,omitempty"`
	DurationMS int64                    `json:"duration_ms"`
	Response   string                   `json:"response,omitempty"`
	Error      string                   `json:"error,omitempty"`
}

// testHook is POST /v1/hooks/:id/test: a signed hook.test event is sent
// to the hook's target now, from this process, and the answer says how it
// went. It is recorded in the key's delivery log like any delivery. A
// disabled hook may be tested (to check a receiver before enabling it); a
// test's 410 does not disable it.
func (s *Server) testHook(c echo.Context) error {
	h, err := s.ownedHook(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, s.hookTestLimit()); err != nil {
		return err
	}
	ctx := c.Request().Context()
	now := s.cfg.Now()
	msg, err := connector.NewMessage("msg_"+uuid.Must(uuid.NewV7()).String(), h.Owner, connector.EventHookTest, now,
		hookTestData{HookID: h.ID, Message: "A test event from imgflow: this hook's deliveries reach you."})
	if err != nil {
		return err
	}
	if err := s.cfg.Hooks.PutMessage(ctx, msg); err != nil {
		return err
	}
	id := connector.MessageDeliveryID(msg.ID, h.ID)
	secrets := s.cfg.Keyring.WebhookSecrets("hook", h.ID, connector.SigningVersions(h.SecretVersion, h.PreviousSecretUntil, now))
	res := s.cfg.Sender.Send(ctx, h.TargetURL, secrets, id, msg.Body)
	a := res.Attempt(id, h.ID, msg.Type, h.TargetURL, now)
	out := testAnswer{DeliveryID: id, MessageID: msg.ID, Event: msg.Type, Target: a.Target, Status: connector.DeliveryDelivered,
		StatusCode: res.Status, DurationMS: a.DurationMS, Response: res.Response}
	if res.Err != nil {
		out.Status, out.Error = connector.DeliveryFailed, a.Error
	}
	if err := s.cfg.Hooks.RecordMessageAttempt(ctx, msg, a); err != nil {
		s.logger(c).Warn("could not record the test delivery", "err", err)
	}
	s.logger(c).Info("test event sent", "hook_id", h.ID, "status", res.Status, "delivered", res.Err == nil)
	return c.JSON(http.StatusOK, out)
}

// recoverRequest is POST /v1/hooks/{id}/recover.
type recoverRequest struct {
	Since string `json:"since"`
}

// recoverAnswer says how many deliveries were queued again.
type recoverAnswer struct {
	Queued int       `json:"queued"`
	Since  time.Time `json:"since"`
}

// maxRecoverPages bounds one recovery: 100 pages of the delivery index.
const maxRecoverPages = 100

// recoverHook is POST /v1/hooks/:id/recover: every delivery to the hook
// first attempted since the given time that ended failed is queued once
// more (same webhook-id, fresh signature, one attempt each, through the
// hook's rate); 202 with how many.
func (s *Server) recoverHook(c echo.Context) error {
	h, err := s.ownedHook(c)
	if err != nil {
		return err
	}
	var in recoverRequest
	if err := readJSON(c, &in); err != nil {
		return err
	}
	since, err := time.Parse(time.RFC3339, strings.TrimSpace(in.Since))
	switch {
	case in.Since == "":
		return fieldError("since", "is required: an RFC 3339 time such as 2026-11-24T09:00:00Z")
	case err != nil:
		return fieldError("since", "must be an RFC 3339 time such as 2026-11-24T09:00:00Z")
	case since.After(s.cfg.Now()):
		return fieldError("since", "is in the future")
	}
	if h.Disabled {
		return connector.Errorf(connector.EDISABLED, "hook %s is disabled (%s): enable it first", h.ID, connector.DescribeDisabled(h.DisabledReason))
	}
	if err := s.allow(c, s.hookRecoverLimit()); err != nil {
		return err
	}
	ctx := c.Request().Context()
	f := connector.DeliveryFilter{HookID: h.ID, Status: connector.DeliveryFailed, Since: since, Limit: 100}
	queued := 0
	for range maxRecoverPages {
		page, err := s.cfg.Hooks.ListDeliveries(ctx, h.Owner, f)
		if err != nil {
			return err
		}
		for _, r := range page.Deliveries {
			d := connector.Delivery{ID: r.ID, JobID: r.JobID, MessageID: r.MessageID, Owner: h.Owner, HookID: h.ID, Event: r.Event, Redeliver: true}
			if err := s.cfg.Queue.EnqueueDelivery(ctx, d); err != nil {
				return err
			}
			queued++
		}
		if f.Cursor = page.NextCursor; f.Cursor == "" {
			break
		}
	}
	s.logger(c).Info("hook recovery queued", "hook_id", h.ID, "since", since, "queued", queued)
	return c.JSON(http.StatusAccepted, recoverAnswer{Queued: queued, Since: since.UTC()})
}

// listAllDeliveries is GET /v1/deliveries: the key's deliveries across jobs
// and events, newest first, each with its attempts; status and hook_id
// filter, limit and cursor page.
func (s *Server) listAllDeliveries(c echo.Context) error {
	limit, err := pageLimit(c, 100, 100)
	if err != nil {
		return err
	}
	f := connector.DeliveryFilter{Limit: limit, HookID: c.QueryParam("hook_id"), Cursor: c.QueryParam("cursor"),
		Status: connector.DeliveryStatus(c.QueryParam("status"))}
	switch f.Status {
	case "", connector.DeliveryPending, connector.DeliveryDelivered, connector.DeliveryFailed:
	default:
		return fieldError("status", "must be pending, delivered or failed")
	}
	page, err := s.cfg.Hooks.ListDeliveries(c.Request().Context(), s.owner(apiKey(c)), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// secretAnswer is the JSON of POST /v1/account/rotate-secret.
type secretAnswer struct {
	WebhookSecret           string     `json:"webhook_secret"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at,omitempty"`
}

// rotateCallbackSecret is POST /v1/account/rotate-secret: the key's
// callbacks get a new signing secret; for SecretOverlap they carry the
// previous one's signature too.
func (s *Server) rotateCallbackSecret(c echo.Context) error {
	owner := s.owner(apiKey(c))
	v, err := s.cfg.Hooks.RotateCallbackSecret(c.Request().Context(), owner, s.cfg.Now(), s.cfg.SecretOverlap)
	if err != nil {
		return err
	}
	s.logger(c).Info("callback secret rotated", "secret_version", v.Version)
	until := v.PreviousUntil
	return c.JSON(http.StatusOK, secretAnswer{WebhookSecret: s.cfg.Keyring.WebhookSecretVersion("callback", owner, v.Version), PreviousSecretExpiresAt: &until})
}

// callbackSecret is the key's current callback signing secret.
func (s *Server) callbackSecret(c echo.Context, owner string) (string, error) {
	v, err := s.cfg.Hooks.CallbackSecretVersion(c.Request().Context(), owner)
	if err != nil {
		return "", err
	}
	return s.cfg.Keyring.WebhookSecretVersion("callback", owner, v.Version), nil
}
