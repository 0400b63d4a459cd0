package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// codeMethodNotAllowed is an HTTP-only code: the domain never produces it.
const codeMethodNotAllowed connector.ErrorCode = "method_not_allowed"

// codeClientClosed is the code of a request whose client went away before
// its answer (Ctrl-C mid-upload), answered (to nobody) and logged as nginx
// does: statusClientClosed.
const codeClientClosed connector.ErrorCode = "client_closed_request"

const statusClientClosed = 499

// statusOf is the one table from domain error codes to HTTP statuses.
var statusOf = map[connector.ErrorCode]int{
	connector.EINVALID:           http.StatusBadRequest,
	connector.EURLREFUSED:        http.StatusBadRequest,
	connector.EFORMAT:            http.StatusBadRequest,
	connector.EFETCH:             http.StatusBadRequest,
	connector.EUNAUTHORIZED:      http.StatusUnauthorized,
	connector.ENOTFOUND:          http.StatusNotFound,
	connector.ECONFLICT:          http.StatusConflict,
	connector.ETOOLARGE:          http.StatusRequestEntityTooLarge,
	connector.EMEDIATYPE:         http.StatusUnsupportedMediaType,
	connector.EMISMATCH:          http.StatusUnprocessableEntity,
	connector.ETRANSFORMOFF:      http.StatusUnprocessableEntity,
	connector.EMETADATA:          http.StatusUnprocessableEntity,
	connector.ETRANSFORMTIME:     http.StatusUnprocessableEntity,
	connector.ETARGETUNREACHABLE: http.StatusUnprocessableEntity,
	connector.EDISABLED:          http.StatusConflict,
	connector.ETOOMANYHOOKS:      http.StatusConflict,
	connector.ENOCREDITS:         http.StatusTooManyRequests,
	connector.ETOOMANY:           http.StatusTooManyRequests,
	connector.ERATELIMITED:       http.StatusTooManyRequests,
	connector.EUPSTREAM:          http.StatusBadGateway,
	connector.EUNAVAILABLE:       http.StatusServiceUnavailable,
	connector.EBUSY:              http.StatusServiceUnavailable,
	ESLOWBODY:                    http.StatusRequestTimeout,
	connector.EUPSTREAMDOWN:      http.StatusServiceUnavailable,
	connector.EINTERNAL:          http.StatusInternalServerError,
	codeMethodNotAllowed:         http.StatusMethodNotAllowed,
	codeClientClosed:             statusClientClosed,
	connector.EFAILBUDGET:        http.StatusTooManyRequests,
}

// fromEchoError maps Echo's own errors (unknown route, wrong method, body too
// large) into domain errors, so every answer has the same shape.
func fromEchoError(he *echo.HTTPError) *connector.Error {
	msg := http.StatusText(he.Code)
	if m, ok := he.Message.(string); ok && m != "" {
		msg = m
	}
	switch he.Code {
	case http.StatusNotFound:
		return connector.Errorf(connector.ENOTFOUND, "Not found")
	case http.StatusMethodNotAllowed:
		return connector.Errorf(codeMethodNotAllowed, "Method not allowed")
	case http.StatusRequestEntityTooLarge:
		return connector.Errorf(connector.ETOOLARGE, "request body too large: images are limited to %d bytes", connector.MaxImageSize)
	case http.StatusUnauthorized:
		return connector.Errorf(connector.EUNAUTHORIZED, "%s", msg)
	case http.StatusUnsupportedMediaType:
		return connector.Errorf(connector.EMEDIATYPE, "%s", msg)
	}
	if he.Code >= 500 {
		return &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: he}
	}
	return connector.Errorf(connector.EINVALID, "%s", msg)
}

// handleError is Echo's error handler: every error leaves here, mapped once.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var e *connector.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &e):
	case errors.As(err, &he):
		e = fromEchoError(he)
	default:
		e = connector.AsError(err)
	}
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		// The caller ended its own request: not the server's failure, so
		// no 500 and no error log; nobody reads the answer.
		s.logger(c).Info("client went away before the answer", "err", err)
		e = connector.Errorf(codeClientClosed, "Client closed the request")
	}
	status := statusOf[e.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	msg := e.Message
	if status >= 500 && e.Code == connector.EINTERNAL {
		msg = "Internal error"
		s.logger(c).Error("internal error", "err", err)
	}
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	} else if status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "5")
	}
	body := connector.ErrorBody{Error: msg, Code: e.Code, Details: e.Details, CreditsRemaining: e.CreditsRemaining, UpstreamStatus: e.UpstreamStatus}
	if c.Request().Method == http.MethodHead {
		c.NoContent(status)
		return
	}
	c.JSON(status, body)
}
