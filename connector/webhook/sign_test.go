package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func headersFor(t *testing.T, msgID string, ts time.Time, body []byte) http.Header {
	t.Helper()
	sig, err := Sign(secret, msgID, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return h
}

func TestSignMatchesTheStandardWebhooksTestVector(t *testing.T) {
	// The vector of the Standard Webhooks specification's own test suites.
	sig, err := Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if err != nil || sig != want {
		t.Errorf("expected %s, got %s %v", want, sig, err)
	}
}

func TestSignVerifiesWithTheReferenceLibrary(t *testing.T) {
	body := []byte(`{"type":"job.completed","data":{"id":"j1"}}`)
	wh, _ := standardwebhooks.NewWebhook(secret)
	if err := wh.Verify(body, headersFor(t, "msg_1", time.Now(), body)); err != nil {
		t.Errorf("expected the signature to verify, got %v", err)
	}
}

func TestSignFailsVerificationWithAnotherSecret(t *testing.T) {
	body := []byte(`{"a":1}`)
	other, _ := standardwebhooks.NewWebhook("whsec_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	err := other.Verify(body, headersFor(t, "msg_1", time.Now(), body))
	if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("expected %v, got %v", standardwebhooks.ErrNoMatchingSignature, err)
	}
}

func TestSignFailsVerificationForAnOldTimestamp(t *testing.T) {
	body := []byte(`{"a":1}`)
	wh, _ := standardwebhooks.NewWebhook(secret)
	err := wh.Verify(body, headersFor(t, "msg_1", time.Now().Add(-10*time.Minute), body))
	if !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
		t.Errorf("expected %v, got %v", standardwebhooks.ErrMessageTooOld, err)
	}
}

func TestSignFailsVerificationForATamperedBody(t *testing.T) {
	wh, _ := standardwebhooks.NewWebhook(secret)
	err := wh.Verify([]byte(`{"a":2}`), headersFor(t, "msg_1", time.Now(), []byte(`{"a":1}`)))
	if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("expected %v, got %v", standardwebhooks.ErrNoMatchingSignature, err)
	}
}

func TestSignRefusesABadSecretWithoutShowingIt(t *testing.T) {
	_, err := Sign("whsec_not*base64!", "msg_1", time.Now(), nil)
	if !errors.Is(err, ErrBadSecret) || strings.Contains(err.Error(), "not*base64") {
		t.Errorf("expected %v without the secret, got %v", ErrBadSecret, err)
	}
}

func TestSignAllVerifiesWithEitherSecret(t *testing.T) {
	other := "whsec_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	body := []byte(`{"type":"hook.test"}`)
	now := time.Now()
	sig, err := SignAll([]string{other, secret}, "msg_rot", now, body)
	if err != nil || strings.Count(sig, "v1,") != 2 || !strings.Contains(sig, " ") {
		t.Fatalf("expected two space-separated signatures, got %q, %v", sig, err)
	}
	h := http.Header{}
	h.Set(HeaderID, "msg_rot")
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, sig)
	for _, s := range []string{other, secret} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("expected %s... to verify, got %v", s[:10], err)
		}
	}
	if _, err := SignAll(nil, "m", now, body); !errors.Is(err, ErrNoSecret) {
		t.Errorf("expected ErrNoSecret without secrets, got %v", err)
	}
}
