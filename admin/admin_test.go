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
