// Package admin serves imgflow's operator pages: the asynq queue dashboard
// (asynqmon) at /admin/queues, where queued, scheduled, retrying and
// archived tasks can be seen, retried or deleted. It is behind a token
// (IMGFLOW_ADMIN_TOKEN) and is not mounted at all without one.
package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/labstack/echo/v4"
)

// Path is where the queue dashboard lives; its JSON API is under Path/api.
const Path = "/admin/queues"

// cookieName holds a value derived from the token once ?token= was given,
// so the dashboard's own requests are let in without the token in the URL.
const cookieName = "imgflow_admin"

// cookieLifetime is how long a browser stays signed in to the dashboard.
const cookieLifetime = 12 * time.Hour

// Mount adds the queue dashboard at Path to e, reading the queues through
// redisOpt. An empty token mounts nothing, so /admin/queues answers 404.
// Otherwise every request must carry the token, compared in constant time,
// as `Authorization: Bearer TOKEN`, or as `?token=TOKEN` once, which sets an
// HttpOnly, SameSite=Strict cookie and redirects to the same page without
// the token. Requests that change state (pause a queue, delete or run
// tasks) must also come from the dashboard's own origin, or one of
// trustedOrigins (the public URL behind a proxy that rewrites Host): a
// foreign one gets 403 (see sameOrigin). closeFn releases the dashboard's
// Redis connections.
func Mount(e *echo.Echo, redisOpt asynq.RedisConnOpt, token string, trustedOrigins ...string) (closeFn func() error) {
	if token == "" {
		return func() error { return nil }
	}
	dash := asynqmon.New(asynqmon.Options{RootPath: Path, RedisConnOpt: redisOpt})
	h := echo.WrapHandler(dash)
	guards := []echo.MiddlewareFunc{sameOrigin(trustedOrigins), requireToken(token)}
	e.Any(Path, h, guards...)
	e.Any(Path+"/*", h, guards...)
	return dash.Close
}

// sameOrigin refuses state-changing requests a browser sent from another
// site, with 403, before the token is looked at: the cookie alone (which a
// browser attaches to cross-site requests too, SameSite aside) must not be
// enough to pause a queue or delete tasks. net/http's
// CrossOriginProtection reads Sec-Fetch-Site, then Origin against Host;
// for the old browsers that send neither, a Referer from another host is
// refused as well. GET, HEAD and OPTIONS pass, and so do requests with none of
// these headers (curl, scripts with the bearer token).
func sameOrigin(trustedOrigins []string) echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins {
		if o != "" {
			cop.AddTrustedOrigin(strings.TrimRight(o, "/")) // a bad origin only means no exception
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			err := cop.Check(req)
			if err == nil && !safeMethod(req.Method) && req.Header.Get("Sec-Fetch-Site") == "" && req.Header.Get("Origin") == "" {
				err = checkReferer(req, trustedOrigins)
			}
			if err != nil {
				return c.JSON(http.StatusForbidden, map[string]string{
					"error": "cross-site request refused: the admin pages change state only for requests from their own origin",
					"code":  "cross_site_request",
				})
			}
			return next(c)
		}
	}
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkReferer refuses a Referer whose origin is neither the request's
// host nor a trusted origin; no Referer passes.
func checkReferer(req *http.Request, trustedOrigins []string) error {
	ref := req.Header.Get("Referer")
	if ref == "" {
		return nil
	}
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" {
		return errors.New("unreadable Referer")
	}
	if u.Host == req.Host {
		return nil
	}
	for _, o := range trustedOrigins {
		if t, err := url.Parse(o); err == nil && t.Scheme == u.Scheme && t.Host == u.Host {
			return nil
		}
	}
	return errors.New("cross-site Referer")
}

// requireToken lets a request through when it carries token as a bearer
// token, a ?token= query or the cookie the query sets.
func requireToken(token string) echo.MiddlewareFunc {
	session := sessionValue(token)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("Cache-Control", "no-store")
			h.Set("Referrer-Policy", "no-referrer")
			req := c.Request()
			if bearer, ok := strings.CutPrefix(req.Header.Get(echo.HeaderAuthorization), "Bearer "); ok && equal(bearer, token) {
				return next(c)
			}
			if ck, err := req.Cookie(cookieName); err == nil && equal(ck.Value, session) {
				return next(c)
			}
			if q := c.QueryParam("token"); q != "" && equal(q, token) {
				c.SetCookie(&http.Cookie{
					Name:     cookieName,
					Value:    session,
					Path:     Path,
					MaxAge:   int(cookieLifetime.Seconds()),
					HttpOnly: true,
					Secure:   c.Scheme() == "https",
					SameSite: http.SameSiteStrictMode,
				})
				u := *req.URL
				query := u.Query()
				query.Del("token")
				u.RawQuery = query.Encode()
				return c.Redirect(http.StatusSeeOther, u.RequestURI())
			}
			// Answered here, not returned as an error: the API's error
			// handler maps framework errors by its own table.
			h.Set(echo.HeaderWWWAuthenticate, `Bearer realm="imgflow admin"`)
			return c.JSON(http.StatusUnauthorized, map[string]string{
				"error": "the admin pages need IMGFLOW_ADMIN_TOKEN: send Authorization: Bearer TOKEN, or open " + Path + "?token=TOKEN once",
				"code":  "invalid_key",
			})
		}
	}
}

// sessionValue is what the cookie holds: derived from the token, so the
// cookie never carries the token itself.
func sessionValue(token string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("imgflow admin session v1"))
	return hex.EncodeToString(mac.Sum(nil))
}

// equal compares in constant time; hashing first hides the length too.
func equal(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
