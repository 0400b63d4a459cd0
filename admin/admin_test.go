package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/admin"
	"github.com/imgflow/imgflow/internal/redistest"
)

const token = "s3cret-admin-token"

// dashboard is an Echo app with the dashboard mounted on a test Redis that
// holds one pending task in the test's queue.
func dashboard(t *testing.T, token string) (*echo.Echo, *redistest.Redis) {
	t.Helper()
	r := redistest.New(t)
	opt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	if _, err := client.Enqueue(asynq.NewTask("compress", []byte(`{}`)), asynq.Queue(r.Queue())); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	e := echo.New()
	// Like the API's: 404 stays 404, other framework errors become 400, so
	// the 401 must be answered by the dashboard's guard itself.
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if he, ok := err.(*echo.HTTPError); ok && he.Code == http.StatusNotFound {
			c.JSON(http.StatusNotFound, map[string]string{"error": "Not found", "code": "not_found"})
			return
		}
		c.JSON(http.StatusBadRequest, map[string]string{"error": err.Error(), "code": "invalid_input"})
	}
	closeFn := admin.Mount(e, opt, token)
	t.Cleanup(func() { closeFn() })
	return e, r
}

func get(e *echo.Echo, target string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func bearer(tok string) http.Header {
	return http.Header{"Authorization": {"Bearer " + tok}}
}

func TestDashboardIsAbsentWithoutAToken(t *testing.T) {
	e, _ := dashboard(t, "")
	for _, path := range []string{admin.Path, admin.Path + "/api/queues"} {
		if rec := get(e, path, bearer("")); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s with IMGFLOW_ADMIN_TOKEN unset: status %d, want 404", path, rec.Code)
		}
	}
}

func TestDashboardRefusesRequestsWithoutTheToken(t *testing.T) {
	e, _ := dashboard(t, token)
	cases := map[string]http.Header{
		"no token":          nil,
		"wrong token":       bearer("not-the-token"),
		"token prefix":      bearer(token[:5]),
		"basic, not bearer": {"Authorization": {"Basic " + token}},
		"forged cookie":     {"Cookie": {"imgflow_admin=" + token}},
	}
	for name, h := range cases {
		for _, path := range []string{admin.Path, admin.Path + "/api/queues"} {
			rec := get(e, path, h)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s: GET %s status %d, want 401", name, path, rec.Code)
			}
			if !strings.Contains(rec.Body.String(), `"code":"invalid_key"`) || rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s: GET %s answered %s, %q; want a JSON error with code invalid_key and WWW-Authenticate", name, path, rec.Body, rec.Header().Get("WWW-Authenticate"))
			}
			if strings.Contains(rec.Body.String(), "compress") {
				t.Errorf("%s: GET %s leaked queue contents: %s", name, path, rec.Body)
			}
		}
	}
	if rec := get(e, admin.Path+"?token=wrong", nil); rec.Code != http.StatusUnauthorized || rec.Header().Get("Set-Cookie") != "" {
		t.Errorf("?token=wrong: status %d, Set-Cookie %q; want 401 and no cookie", rec.Code, rec.Header().Get("Set-Cookie"))
	}
}

func TestDashboardServesTheUIAndQueuesWithTheBearerToken(t *testing.T) {
	e, r := dashboard(t, token)
	rec := get(e, admin.Path, bearer(token))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<html") {
		t.Fatalf("GET %s with the token: status %d, want 200 and the dashboard's HTML; body starts %.200q", admin.Path, rec.Code, rec.Body)
	}
	rec = get(e, admin.Path+"/api/queues", bearer(token))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s/api/queues: status %d, want 200; body %s", admin.Path, rec.Code, rec.Body)
	}
	var body struct {
		Queues []struct {
			Queue   string `json:"queue"`
			Pending int    `json:"pending"`
		} `json:"queues"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("queues answer is not JSON: %v: %s", err, rec.Body)
	}
	for _, q := range body.Queues {
		if q.Queue == r.Queue() {
			if q.Pending != 1 {
				t.Errorf("queue %s: pending %d, want 1", q.Queue, q.Pending)
			}
			return
		}
	}
	t.Errorf("queue %s with a pending task is not listed: %s", r.Queue(), rec.Body)
}

func TestDashboardTokenInTheURLSetsACookieAndDropsTheToken(t *testing.T) {
	e, _ := dashboard(t, token)
	rec := get(e, admin.Path+"?token="+token+"&tab=pending", nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("GET ?token=: status %d, want 303", rec.Code)
	}
	if loc := rec.Header().Get("Location"); loc != admin.Path+"?tab=pending" {
		t.Errorf("redirect to %q, want %q (the same page without the token)", loc, admin.Path+"?tab=pending")
	}
	res := rec.Result()
	cookies := res.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("got %d cookies, want 1", len(cookies))
	}
	ck := cookies[0]
	if ck.Value == token || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != admin.Path {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=%s and not the token itself", ck, admin.Path)
	}
	rec = get(e, admin.Path+"/api/queues", http.Header{"Cookie": {ck.Name + "=" + ck.Value}})
	if rec.Code != http.StatusOK {
		t.Errorf("GET with the cookie: status %d, want 200", rec.Code)
	}
}

// signIn opens the dashboard with ?token= as a browser would, and returns
// the session cookie it sets.
func signIn(t *testing.T, e *echo.Echo) string {
	t.Helper()
	rec := get(e, admin.Path+"?token="+token, nil)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("sign-in: status %d, %d cookies; want 303 and the session cookie", rec.Code, len(cookies))
	}
	return cookies[0].Name + "=" + cookies[0].Value
}

// queuePaused reads the queue's state through the dashboard's API.
func queuePaused(t *testing.T, e *echo.Echo, queue string) bool {
	t.Helper()
	rec := get(e, admin.Path+"/api/queues", bearer(token))
	var body struct {
		Queues []struct {
			Queue  string `json:"queue"`
			Paused bool   `json:"paused"`
		} `json:"queues"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("queues answer: %v: %s", err, rec.Body)
	}
	for _, q := range body.Queues {
		if q.Queue == queue {
			return q.Paused
		}
	}
	t.Fatalf("queue %s not listed: %s", queue, rec.Body)
	return false
}

// TestDashboardRefusesCrossSiteStateChanges: a page on another site that
// makes the signed-in operator's browser POST to the dashboard (the cookie
// rides along) gets 403 and changes nothing; the dashboard's own requests
// still work.
func TestDashboardRefusesCrossSiteStateChanges(t *testing.T) {
	e, r := dashboard(t, token)
	cookie := signIn(t, e)
	pause := admin.Path + "/api/queues/" + r.Queue() + ":pause"
	post := func(header http.Header) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, pause, nil) // Host: example.com
		req.Header.Set("Cookie", cookie)
		for k, v := range header {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	foreign := map[string]http.Header{
		"foreign Origin":          {"Origin": {"https://evil.example"}},
		"Sec-Fetch-Site":          {"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}},
		"same-site subdomain":     {"Sec-Fetch-Site": {"same-site"}, "Origin": {"https://other.example.com"}},
		"foreign Referer only":    {"Referer": {"https://evil.example/page"}},
		"null Origin (sandboxed)": {"Origin": {"null"}},
	}
	for name, h := range foreign {
		rec := post(h)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"code":"cross_site_request"`) {
			t.Errorf("%s: POST %s answered %d %s; want 403 cross_site_request", name, pause, rec.Code, rec.Body)
		}
		if queuePaused(t, e, r.Queue()) {
			t.Fatalf("%s: the queue was paused by a cross-site request", name)
		}
	}
	// A foreign origin is refused even with the bearer token.
	if rec := post(http.Header{"Origin": {"https://evil.example"}, "Authorization": {"Bearer " + token}}); rec.Code != http.StatusForbidden {
		t.Errorf("foreign Origin with the bearer token: %d, want 403", rec.Code)
	}

	// The dashboard's own request, as a browser sends it.
	rec := post(http.Header{"Origin": {"http://example.com"}, "Sec-Fetch-Site": {"same-origin"}})
	if rec.Code >= 300 {
		t.Fatalf("same-origin POST: %d %s, want success", rec.Code, rec.Body)
	}
	if !queuePaused(t, e, r.Queue()) {
		t.Fatal("same-origin pause did not pause the queue")
	}
}

// TestDashboardTrustsThePublicURLOrigin: behind a proxy that rewrites Host,
// requests from the public URL's origin are the dashboard's own.
func TestDashboardTrustsThePublicURLOrigin(t *testing.T) {
	r := redistest.New(t)
	opt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	closeFn := admin.Mount(e, opt, token, "https://imgflow.example.org/")
	t.Cleanup(func() { closeFn() })
	for origin, want := range map[string]int{"https://imgflow.example.org": http.StatusOK, "https://evil.example": http.StatusForbidden} {
		req := httptest.NewRequest(http.MethodPost, admin.Path+"/api/queues/"+r.Queue()+":pause", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Origin", origin)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if (want == http.StatusOK) != (rec.Code < 300) || (want == http.StatusForbidden && rec.Code != want) {
			t.Errorf("Origin %s: %d %s, want %d", origin, rec.Code, rec.Body, want)
		}
	}
}
