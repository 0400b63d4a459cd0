package system_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// dumpRedis returns every key and value the test's system wrote: its own
// prefix and its asynq queue's keys, each value read by its type (DUMP
// would compress long strings and hide them).
// fairKeys is the pattern of fair dispatch's keys of the system's queue
// (worker/dispatch.go).
func fairKeys(s *systemtest.System) string {
	return "imgflow:fair:{" + s.Redis.Queue() + "}:*"
}

func dumpRedis(t *testing.T, s *systemtest.System) string {
	t.Helper()
	ctx := context.Background()
	c := s.Redis.Client
	var b strings.Builder
	for _, pattern := range []string{s.Redis.Prefix + "*", asynqext.QueueOf(s.Redis.Queue()).KeyPattern(), fairKeys(s)} {
		keys, err := c.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			typ, err := c.Type(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			var v any
			switch typ {
			case "string":
				v, err = c.Get(ctx, k).Result()
			case "hash":
				v, err = c.HGetAll(ctx, k).Result()
			case "list":
				v, err = c.LRange(ctx, k, 0, -1).Result()
			case "set":
				v, err = c.SMembers(ctx, k).Result()
			case "zset":
				v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
			case "stream":
				v, err = c.XRange(ctx, k, "-", "+").Result()
			case "none":
				continue // expired meanwhile
			default:
				t.Fatalf("%s: a %s, which this scan cannot read", k, typ)
			}
			if err != nil && err != redis.Nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s = %v\n", k, v)
		}
	}
	return b.String()
}

// An API key and the webhook secrets never appear in plain text in the
// logs, in Redis (imgflow's keys, its queue's, and the reference upstream's
// ledger) or in any URL imgflow hands out or calls, after jobs with the key
// in each place it may come, a callback and hook deliveries.
func TestKeysAndSecretsAreNeverInLogsRedisOrURLs(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	var mu sync.Mutex
	var seenURLs []string
	delivered := make(chan struct{}, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seenURLs = append(seenURLs, r.URL.String())
		mu.Unlock()
		delivered <- struct{}{}
	}))
	defer receiver.Close()

	_, _, acct := s.Request("GET", "/v1/account", "", nil, auth)
	var account struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	json.Unmarshal(acct, &account)
	_, _, hookBody := s.Request("POST", "/v1/hooks", "application/json",
		strings.NewReader(`{"target_url":"`+receiver.URL+`/hook","event":"job.finished"}`), auth)
	var hook struct{ Secret string }
	json.Unmarshal(hookBody, &hook)
	if !strings.HasPrefix(account.WebhookSecret, "whsec_") || !strings.HasPrefix(hook.Secret, "whsec_") {
		t.Fatalf("secrets %q, %q; want whsec_...", account.WebhookSecret, hook.Secret)
	}

	// The key in every place a request may carry it.
	var answers []string
	for _, req := range []struct{ body, ct, keyHeader string }{
		{`{"image_url":"` + s.Samples + `/photo.png","callback_url":"` + receiver.URL + `/cb?sig=1"}`, "application/json", "X-API-Key"},
		{`{"image_url":"` + s.Samples + `/photo.jpg"}`, "application/json", "Authorization"},
		{`{"image_url":"` + s.Samples + `/photo.webp","api_key":"` + s.Key + `"}`, "application/json", ""},
	} {
		hdr := map[string]string{}
		switch req.keyHeader {
		case "X-API-Key":
			hdr["X-API-Key"] = s.Key
		case "Authorization":
			hdr["Authorization"] = "Bearer " + s.Key
		}
		st, h, body := s.Request("POST", "/v1/jobs?wait=20", req.ct, strings.NewReader(req.body), hdr)
		s.ExpectCompressed(st, body, "image/"+mimeOf(req.body))
		answers = append(answers, string(body), h.Get("Location"))
	}
	for range 4 { // the callback, and the hook for each of three jobs (at least one)
		select {
		case <-delivered:
		case <-time.After(20 * time.Second):
			t.Fatal("deliveries missing after 20 s")
		}
	}

	secrets := map[string]string{
		"the API key":                s.Key,
		"the API key in base64":      base64.StdEncoding.EncodeToString([]byte(s.Key)),
		"the webhook secret":         account.WebhookSecret,
		"the webhook secret's bytes": strings.TrimPrefix(account.WebhookSecret, "whsec_"),
		"the hook secret":            hook.Secret,
		"the hook secret's bytes":    strings.TrimPrefix(hook.Secret, "whsec_"),
	}
	mu.Lock()
	urls := strings.Join(append(seenURLs, answers...), "\n")
	mu.Unlock()
	places := map[string]string{"the logs": s.Logs.String(), "Redis": dumpRedis(t, s), "URLs and answers": urls}
	// The scan must reach the job records and asynq's tasks (their
	// payloads). Fair dispatch's keys hold job and owner ids only, and
	// none is left once every job has ended (a key without a limit keeps
	// no count): they are scanned, but need not be there.
	seen := []string{s.Redis.Prefix + "job:"}
	if s.Options.Dispatch == "asynq" {
		seen = append(seen, asynqext.QueueOf(s.Redis.Queue()).TaskPrefix())
	}
	for _, want := range seen {
		if !strings.Contains(places["Redis"], want) {
			t.Fatalf("the Redis scan found no %s keys:\n%.500s", want, places["Redis"])
		}
	}
	for where, text := range places {
		for what, secret := range secrets {
			if strings.Contains(text, secret) {
				i := strings.Index(text, secret)
				t.Errorf("%s found in %s: ...%s...", what, where, text[max(0, i-120):min(len(text), i+len(secret)+40)])
			}
		}
	}
}

func mimeOf(body string) string {
	switch {
	case strings.Contains(body, ".jpg"):
		return "jpeg"
	case strings.Contains(body, ".webp"):
		return "webp"
	}
	return "png"
}

// Signatures in flows' URLs (a presigned image URL, an n8n resume URL) are
// the flow's secrets: failed fetches and deliveries are logged by host,
// never with the query.
func TestFlowURLSignaturesAreNotLogged(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	gone := httptest.NewServer(http.NotFoundHandler())
	closed := gone.URL
	gone.Close()
	s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+closed+`/a.png?X-Amz-Signature=presigned-s3cr3t"}`), auth)
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/photo.png","callback_url":"`+closed+`/cb?signature=n8n-resume-s3cr3t"}`), auth)
	s.ExpectCompressed(st, body, "image/png")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.Logs.String(), "delivery attempt failed") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the first delivery attempt, logged once it failed
	}
	logs := s.Logs.String()
	if !strings.Contains(logs, "fetch_failed") || !strings.Contains(logs, "delivery attempt failed") {
		t.Fatalf("no failed fetch or delivery in the logs; the test did not exercise them:\n%.2000s", logs)
	}
	for _, secret := range []string{"presigned-s3cr3t", "n8n-resume-s3cr3t"} {
		if i := strings.Index(logs, secret); i >= 0 {
			t.Errorf("%s in the logs: ...%s...", secret, logs[max(0, i-200):min(len(logs), i+40)])
		}
	}
}
