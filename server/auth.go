package server

import (
	"context"
	"errors"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/keycheck"
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
// from the cached key check (keycheck.Checker.Known). A zero balance
// passes: reads, hooks and Idempotency-Key replays cost nothing. When the
// compression API cannot be asked, only a key it confirmed within the key
// grace passes: flows keep polling through an outage, made-up keys do not.
func (s *Server) authenticate(c echo.Context, key string) error {
	return s.cfg.Keys.Known(s.requestContext(c), key)
}

// apiKey is the key requireKey found.
func apiKey(c echo.Context) string { k, _ := c.Get(ctxAPIKey).(string); return k }

// owner is the stand-in for the key in records: its keyed hash.
func (s *Server) owner(key string) string { return s.cfg.Keyring.KeyHash(key) }

// requestContext is the request's context carrying its logger, so the key
// check's and the creation service's log lines keep the request id.
func (s *Server) requestContext(c echo.Context) context.Context {
	return keycheck.WithLogger(c.Request().Context(), s.logger(c))
}

// isCode reports whether err carries code.
func isCode(err error, code connector.ErrorCode) bool {
	var e *connector.Error
	return errors.As(err, &e) && e.Code == code
}
