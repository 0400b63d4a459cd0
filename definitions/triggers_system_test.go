package definitions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/definitions"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// The hook triggers as the platforms' rendered files subscribe them, against
// the live API: the body Zapier's performSubscribe, Make's attach and Power
// Automate's trigger operation (its own /v1/hooks?trigger=... path) send,
// filled in as each platform fills it in, is accepted, and the hook it makes
// receives the trigger's event, signed.

// renderedFile decodes one rendered definition file.
func renderedFile(t *testing.T, files []definitions.File, path string) map[string]any {
	t.Helper()
	for _, f := range files {
		if f.Path() == path {
			var v map[string]any
			if err := json.Unmarshal(f.Data, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no rendered %s", path)
	return nil
}

// curly matches a whole-value template of Zapier ({{bundle.targetUrl}},
// {{bundle.inputData.x}}) or Make ({{webhook.url}}, {{parameters.x}},
// {{ifempty(parameters.x; undefined)}}).
var curly = regexp.MustCompile(`^\{\{(?:bundle\.inputData\.|parameters\.|ifempty\(parameters\.)?([A-Za-z_.]+?)(?:; undefined\))?\}\}$`)

// fill renders a subscription body template as the platform would: each
// template replaced by the value of its name, left out when it has none.
func fill(t *testing.T, body map[string]any, values map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range body {
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "{{") {
			out[k] = v
			continue
		}
		m := curly.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("unknown template %q", s)
		}
		if val, ok := values[m[1]]; ok {
			out[k] = val
		}
	}
	return out
}

func TestTheRenderedHookTriggersSubscribeAndReceiveTheirEvents(t *testing.T) {
	s := systemtest.Start(t)
	files, err := definitions.Render(s.API)
	if err != nil {
		t.Fatal(err)
	}
	balance := s.Credits()
	threshold := balance - 1 // the next charged job crosses it

	type sub struct {
		platform, path string
		body           map[string]any
		rcv            *systemtest.HookReceiver
		secret         string
		location       string
	}
	var subs []*sub

	// Zapier: performSubscribe's request template (url, body, empty inputs removed).
	app := renderedFile(t, files, "zapier/imgflow-zapier-app.json")
	zapierSub := func(key string, input map[string]any) *sub {
		rcv := systemtest.NewHookReceiver(t, nil)
		ps := app["triggers"].(map[string]any)[key].(map[string]any)["operation"].(map[string]any)["performSubscribe"].(map[string]any)
		values := map[string]any{"bundle.targetUrl": rcv.URL}
		for k, v := range input {
			values[k] = v
		}
		return &sub{platform: "zapier " + key, path: strings.TrimPrefix(ps["url"].(string), s.API),
			body: fill(t, ps["body"].(map[string]any), values), rcv: rcv}
	}
	lowZapier := zapierSub("credits_low", map[string]any{"threshold": threshold})
	batchZapier := zapierSub("batch_finished", nil)
	subs = append(subs, lowZapier, batchZapier)

	// Make: the webhook's attach request, relative to the base URL.
	attach := renderedFile(t, files, "make/webhook-creditsLow.attach.iml.json")
	lowMake := &sub{platform: "make credits_low", path: attach["url"].(string), rcv: systemtest.NewHookReceiver(t, nil)}
	lowMake.body = fill(t, attach["body"].(map[string]any), map[string]any{"webhook.url": lowMake.rcv.URL, "threshold": threshold})
	subs = append(subs, lowMake)

	// Power Automate: the CreditsLow trigger operation's path (below
	// basePath) and its body: the notification URL, internal defaults, inputs.
	swagger := renderedFile(t, files, "powerautomate/apiDefinition.swagger.json")
	var lowPA *sub
	for path, item := range swagger["paths"].(map[string]any) {
		post, _ := item.(map[string]any)["post"].(map[string]any)
		if post == nil || post["operationId"] != "CreditsLow" {
			continue
		}
		lowPA = &sub{platform: "powerautomate credits_low", path: path, body: map[string]any{}, rcv: systemtest.NewHookReceiver(t, nil)}
		params := post["parameters"].([]any)
		props := params[len(params)-1].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)
		for k, p := range props {
			p := p.(map[string]any)
			switch {
			case p["x-ms-notification-url"] == true:
				lowPA.body[k] = lowPA.rcv.URL
			case k == "threshold":
				lowPA.body[k] = threshold
			case p["x-ms-visibility"] == "internal" && p["default"] != nil:
				lowPA.body[k] = p["default"]
			}
		}
	}
	if lowPA == nil {
		t.Fatal("powerautomate: no CreditsLow trigger operation")
	}
	if !strings.HasPrefix(lowPA.path, "/v1/hooks?") {
		t.Fatalf("powerautomate: CreditsLow posts to %s, want /v1/hooks with a query telling it apart", lowPA.path)
	}
	subs = append(subs, lowPA)

	for _, sb := range subs {
		b, _ := json.Marshal(sb.body)
		st, header, answer := s.Request("POST", sb.path, "application/json", bytes.NewReader(b), map[string]string{"X-API-Key": s.Key})
		var hook map[string]any
		json.Unmarshal(answer, &hook)
		if st != http.StatusCreated {
			t.Fatalf("%s: POST %s %s: %d %s", sb.platform, sb.path, b, st, answer)
		}
		// Power Automate deletes a flow's hook through the 201's Location.
		if loc := header.Get("Location"); loc != s.API+"/v1/hooks/"+hook["id"].(string) {
			t.Errorf("%s: Location %q, want the hook's own URL", sb.platform, loc)
		}
		if strings.Contains(sb.platform, "credits_low") && (hook["event"] != "account.credits_low" || hook["threshold"] != float64(threshold)) {
			t.Errorf("%s: made %v, want an account.credits_low hook at %d", sb.platform, hook, threshold)
		}
		sb.secret, sb.location = hook["secret"].(string), header.Get("Location")
	}
	// Without an input the server's default applies (threshold 50).
	def := zapierSub("credits_low", nil)
	b, _ := json.Marshal(def.body)
	if st, hook := s.Call("POST", def.path, string(b)); st != http.StatusCreated || hook["threshold"] != float64(50) {
		t.Errorf("zapier credits_low without a threshold: %d %v, want the default 50", st, hook)
	}

	s.Compress() // balance-1: at the threshold
	for _, sb := range []*sub{lowZapier, lowMake, lowPA} {
		got := sb.rcv.Wait(t, 1)
		typ, data := got[0].Event(t)
		if typ != "account.credits_low" || data["credits_remaining"] != float64(threshold) || data["job_id"] == "" {
			t.Errorf("%s: got %s %v, want account.credits_low at %d", sb.platform, typ, data, threshold)
		}
		if err := got[0].Verifies(sb.secret); err != nil {
			t.Errorf("%s: delivery not signed with the hook's secret: %v", sb.platform, err)
		}
	}

	st, batch := s.Call("POST", "/v1/batches", fmt.Sprintf(`{"items":[{"image_url":%q}],"metadata":{"run":"triggers"}}`, s.Samples+"/screenshot.png"))
	if st != http.StatusAccepted {
		t.Fatalf("POST /v1/batches: %d %v", st, batch)
	}
	got := batchZapier.rcv.Wait(t, 1)
	typ, data := got[0].Event(t)
	if typ != "batch.finished" || data["id"] != batch["id"] || data["status"] != "finished" {
		t.Errorf("batch_finished: got %s %v, want batch.finished of %v", typ, data, batch["id"])
	}
	if err := got[0].Verifies(batchZapier.secret); err != nil {
		t.Errorf("batch_finished: delivery not signed with the hook's secret: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	for _, sb := range subs {
		if n := len(sb.rcv.All()); n != 1 {
			t.Errorf("%s: %d deliveries, want exactly its one event", sb.platform, n)
		}
	}
	// Turning the flow off: DELETE on that Location.
	if st, _ := s.Call("DELETE", strings.TrimPrefix(lowPA.location, s.API), ""); st != http.StatusNoContent {
		t.Errorf("powerautomate: DELETE of the hook's Location answered %d, want 204", st)
	}
	if st, _ := s.Call("GET", strings.TrimPrefix(lowPA.location, s.API), ""); st != http.StatusNotFound {
		t.Errorf("powerautomate: the hook is still there after DELETE (%d)", st)
	}
}
