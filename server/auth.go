package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

const ctxAPIKey = "api_key"

// headerKey returns the compression API key from X-API-Key or
// Authorization: Bearer, "" when neither is set.
func headerKey(c echo.Context) string {
	if k := strings.TrimSpace(c.Request().Header.Get("X-API-Key")); k != "" {
		return k
	}
	auth := c.Request().Header.Get("Authorization")
	if scheme, token, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}

// requestKey is the key from a header, else from the body's api_key field.
func requestKey(c echo.Context, bodyKey string) (string, error) {
	if key := headerKey(c); key != "" {
		return key, nil
	}
	if bodyKey != "" {
		return bodyKey, nil
	}
	return "", errNoKey
}

var errNoKey = &connector.Error{
	Code:    connector.EUNAUTHORIZED,
	Message: "API key required: send it as X-API-Key, Authorization: Bearer, or an api_key field",
}

// requireKey is middleware for routes whose key can only come in a header:
// the key must be one the compression API knows (see authenticate).
func (s *Server) requireKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := headerKey(c)
		if key == "" {
			return errNoKey
		}
		if err := s.authenticate(c, key); err != nil {
			return err
		}
		c.Set(ctxAPIKey, key)
		return next(c)
	}
}

// requireHeaderKeyFirst is requireKey for routes whose bodies are large
// (batches: up to 64 MiB): the key must come in a header and be known
// before a byte of the body is read, so that requests without a valid key
// cost no memory. An api_key in such a body is never what admits it.
func (s *Server) requireHeaderKeyFirst(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := headerKey(c)
		if key == "" {
			return errNoHeaderKey
		}
		if err := s.authenticate(c, key); err != nil {
			return err
		}
		c.Set(ctxAPIKey, key)
		return next(c)
	}
}

var errNoHeaderKey = &connector.Error{
	Code: connector.EUNAUTHORIZED,
	Message: "API key required in a header: send it as X-API-Key or Authorization: Bearer " +
		"(this route does not read a key from its body, which it refuses to read without one)",
}

// headerKeyOnly is requireKey without the key check, for /v1/account,
// which asks the upstream itself on every call.
func (s *Server) headerKeyOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := headerKey(c)
		if key == "" {
			return errNoKey
		}
		c.Set(ctxAPIKey, key)
		return next(c)
	}
}

// authenticate refuses a key the compression API does not know (401),
// from the cached key check (preflight). A zero balance passes: reads,
// hooks and Idempotency-Key replays cost nothing. When the upstream cannot
// be asked, only a key it confirmed within KeyGrace passes (see
// withinGrace): flows keep polling through an outage, made-up keys do not.
func (s *Server) authenticate(c echo.Context, key string) error {
	if err := s.preflight(c, key); err != nil && !isCode(err, connector.ENOCREDITS) {
		return err
	}
	return nil
}

// apiKey is the key requireKey found.
func apiKey(c echo.Context) string { k, _ := c.Get(ctxAPIKey).(string); return k }

// owner is the stand-in for the key in records: its keyed hash.
func (s *Server) owner(key string) string { return s.cfg.Keyring.KeyHash(key) }

// preflight turns a bad key into 401 and a zero balance into 429 before a
// job is queued, from the upstream /validate answer cached per key. If the
// upstream cannot be asked, withinGrace decides.
func (s *Server) preflight(c echo.Context, key string) error {
	return s.checkKey(c.Request().Context(), s.logger(c), key)
}

// checkKey is preflight outside a request's echo.Context (the creation
// service calls it), logging to log.
func (s *Server) checkKey(ctx context.Context, log *slog.Logger, key string) error {
	owner := s.owner(key)
	acct, ok := s.accounts.get(owner, s.cfg.Now())
	if !ok {
		var err error
		if acct, ok, err = s.cfg.Accounts.CachedAccount(ctx, owner); err != nil {
			return err
		}
		if ok {
			s.accounts.put(owner, acct, s.cfg.Now(), min(accountMemoTTL, s.cfg.PreflightTTL))
		}
	}
	if !ok {
		var err error
		acct, err = s.cfg.Compressor.Validate(ctx, key)
		switch connector.ErrorCodeOf(err) {
		case "":
		case connector.EUNAUTHORIZED:
			acct = &connector.Account{Valid: false}
		default:
			return s.withinGrace(ctx, log, owner, err)
		}
		if err := s.remember(ctx, owner, acct); err != nil {
			return err
		}
	}
	return accountError(acct)
}

// remember keeps a key check's answer: briefly in the shared cache and this
// process's memo, and, for a valid key, as the confirmation that
// withinGrace counts from.
func (s *Server) remember(ctx context.Context, owner string, acct *connector.Account) error {
	if err := s.cfg.Accounts.CacheAccount(ctx, owner, acct, s.cfg.PreflightTTL); err != nil {
		return err
	}
	if acct.Valid {
		if err := s.cfg.Accounts.ConfirmKey(ctx, owner, s.cfg.Now(), s.cfg.KeyGrace); err != nil {
			return err
		}
	}
	s.accounts.put(owner, acct, s.cfg.Now(), min(accountMemoTTL, s.cfg.PreflightTTL))
	return nil
}

// keyCheckRetryAfter is the Retry-After of upstream_unavailable: outages
// of the compression API last longer than a Redis blip.
const keyCheckRetryAfter = 30 * time.Second

// withinGrace decides for a key the compression API cannot check now
// (cause): a key it confirmed within KeyGrace passes, so flows run through
// an outage and the worker retries the upstream; any other key gets 503
// upstream_unavailable before anything is read or stored, so made-up keys
// cannot queue work, create hooks or read while the upstream is down.
func (s *Server) withinGrace(ctx context.Context, log *slog.Logger, owner string, cause error) error {
	at, ok, err := s.cfg.Accounts.KeyConfirmedAt(ctx, owner)
	if err != nil {
		return err
	}
	code := connector.ErrorCodeOf(cause)
	if ok && s.cfg.Now().Sub(at) < s.cfg.KeyGrace {
		log.Warn("preflight: key check unavailable; the key was confirmed lately, accepting", "code", code, "confirmed_at", at)
		return nil
	}
	log.Info("preflight: key check unavailable; the key was not confirmed lately, refusing", "code", code)
	return upstreamUnavailable(cause)
}

// upstreamUnavailable is the answer when the compression API cannot check
// a key: 503 with Retry-After.
func upstreamUnavailable(cause error) error {
	return &connector.Error{
		Code:       connector.EUPSTREAMDOWN,
		Message:    "the compression API cannot check this key right now; retry later",
		RetryAfter: keyCheckRetryAfter,
		Retryable:  true,
		Err:        cause,
	}
}

// accountError is the error a key check's answer means for a new job.
func accountError(acct *connector.Account) error {
	if !acct.Valid {
		return &connector.Error{Code: connector.EUNAUTHORIZED, Message: "Invalid API key", UpstreamStatus: 401}
	}
	if acct.CreditsRemaining <= 0 || (acct.CanCompress != nil && !*acct.CanCompress) {
		zero := acct.CreditsRemaining
		return &connector.Error{
			Code:             connector.ENOCREDITS,
			Message:          "Insufficient credits. Please purchase more credits to continue compression.",
			CreditsRemaining: &zero,
		}
	}
	return nil
}

// isCode reports whether err carries code.
func isCode(err error, code connector.ErrorCode) bool {
	var e *connector.Error
	return errors.As(err, &e) && e.Code == code
}
