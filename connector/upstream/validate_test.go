package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func TestValidateReadsTheAccount(t *testing.T) {
	cases := []struct {
		name        string
		body        string
		canCompress *bool
	}{
		{"current listing", `{"valid":true,"user_id":"u-1","subscription_type":"Paid","credits_remaining":1234,"max_image_size":10485760}`, nil},
		{"older listing, can_compress true", `{"valid":true,"user_id":"u-1","subscription_type":"Paid","credits_remaining":1234,"max_image_size":10485760,"can_compress":true}`, boolPtr(true)},
		{"older listing, can_compress false", `{"valid":true,"user_id":"u-1","subscription_type":"Paid","credits_remaining":1234,"max_image_size":10485760,"can_compress":false}`, boolPtr(false)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var gotBody, gotType string
			srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotBody, gotType = string(b), r.Header.Get("Content-Type")
				w.Write([]byte(c.body))
			})
			acct, err := New(srv.URL).Validate(context.Background(), "key-1")
			if err != nil {
				t.Fatalf("expected an account, got %v", err)
			}
			if gotBody != `{"api_key":"key-1"}` || gotType != "application/json" {
				t.Errorf(`expected {"api_key":"key-1"} as application/json, stub got %q as %q`, gotBody, gotType)
			}
			if !acct.Valid || acct.UserID != "u-1" || acct.SubscriptionType != "Paid" || acct.CreditsRemaining != 1234 || acct.MaxImageSize != 10485760 {
				t.Errorf("expected the answer's fields, got %+v", acct)
			}
			if (c.canCompress == nil) != (acct.CanCompress == nil) || (c.canCompress != nil && *c.canCompress != *acct.CanCompress) {
				t.Errorf("expected can_compress %v, got %v", c.canCompress, acct.CanCompress)
			}
		})
	}
}

func TestValidateMapsEveryAnswer(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		code        connector.ErrorCode
		message     string
		retryable   bool
	}{
		{"invalid key as 401", 401, "", `{"error":"Invalid API key","valid":false}`, connector.EUNAUTHORIZED, "Invalid API key", false},
		{"invalid key as 400", 400, "", `{"error":"Invalid API key"}`, connector.EUNAUTHORIZED, "Invalid API key", false},
		{"invalid key as 200 valid:false", 200, "", `{"valid":false}`, connector.EUNAUTHORIZED, "Invalid API key", false},
		{"server error", 500, "", `{"error":"Internal server error"}`, connector.EUPSTREAM, "Internal server error", true},
		{"HTML 502", 502, "text/html", `<html>Bad Gateway</html>`, connector.EUPSTREAM, "compression API answered 502 Bad Gateway", true},
		{"200 without valid", 200, "", `{"user_id":"u-1"}`, connector.EUPSTREAM, "compression API answered 200 to a key check without valid", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := stub(t, c.status, c.contentType, c.body, nil)
			_, err := New(srv.URL).Validate(context.Background(), "secret-key-42")
			var e *connector.Error
			if !errors.As(err, &e) {
				t.Fatalf("expected a *connector.Error, got %T %v", err, err)
			}
			if e.Code != c.code || e.Message != c.message || e.Retryable != c.retryable || e.UpstreamStatus != c.status {
				t.Errorf("expected %s %q retryable=%v status %d, got %s %q retryable=%v status %d",
					c.code, c.message, c.retryable, c.status, e.Code, e.Message, e.Retryable, e.UpstreamStatus)
			}
			if strings.Contains(err.Error(), "secret-key-42") {
				t.Errorf("expected the key kept out of the error, got %q", err.Error())
			}
		})
	}
}

func TestValidateTimesOutAsRetryable(t *testing.T) {
	srv := slowStub(t)
	_, err := New(srv.URL, WithTimeouts(0, 100*time.Millisecond)).Validate(context.Background(), "k")
	e := connector.AsError(err)
	if e.Code != connector.EUPSTREAM || !e.Retryable || e.Message != "the compression API did not answer within 100ms" {
		t.Errorf("expected a retryable %s timeout, got %v", connector.EUPSTREAM, err)
	}
}

func TestHealth(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		healthy bool
	}{
		{"healthy", 200, `{"status":"healthy","service":"image-compression-api"}`, true},
		{"degraded", 200, `{"status":"degraded"}`, false},
		{"down", 503, `{"error":"down"}`, false},
		{"HTML", 502, `<html></html>`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var path, method string
			srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
				path, method = r.URL.Path, r.Method
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			})
			err := New(srv.URL + "/api/").Health(context.Background())
			if path != "/api/health" || method != http.MethodGet {
				t.Errorf("expected GET /api/health, got %s %s", method, path)
			}
			if c.healthy && err != nil {
				t.Errorf("expected healthy, got %v", err)
			}
			if !c.healthy {
				if e := connector.AsError(err); e.Code != connector.EUPSTREAM || !e.Retryable {
					t.Errorf("expected a retryable %s, got %v", connector.EUPSTREAM, err)
				}
			}
		})
	}
}

func boolPtr(b bool) *bool { return &b }
