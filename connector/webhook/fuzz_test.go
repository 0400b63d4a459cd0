package webhook

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// FuzzSignatureVerification: what Sign makes verifies with the Standard
// Webhooks reference library for any secret, id and body; a changed body
// does not; and a receiver's verification of arbitrary signature and
// timestamp headers never panics and never accepts a header that does not
// carry the right signature.
func FuzzSignatureVerification(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"), "msg_1", []byte(`{"type":"job.completed"}`), "v1,AAAA", "0")
	f.Add([]byte{0}, "01a2079a-bc0b-759e-92bf-0dc62bed2535", []byte{}, "v1,x v2,y v1", "1e9")
	f.Add([]byte("k"), "a.b", []byte("."), "v1a,,,", "-5")
	f.Fuzz(func(t *testing.T, key []byte, msgID string, body []byte, sigHeader, tsHeader string) {
		if len(key) == 0 {
			return
		}
		secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatalf("NewWebhook(%q): %v", secret, err)
		}
		now := time.Now()
		sig, err := Sign(secret, msgID, now, body)
		if msgID == "" {
			if err != ErrNoMessageID {
				t.Fatalf("Sign with an empty message id: %q, %v; want ErrNoMessageID", sig, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		h := http.Header{}
		h.Set(HeaderID, msgID)
		h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(HeaderSignature, sig)
		if err := wh.Verify(body, h); err != nil {
			t.Fatalf("our signature %q does not verify: %v", sig, err)
		}
		if err := wh.Verify(append(append([]byte(nil), body...), 'x'), h); err == nil {
			t.Fatalf("a changed body verified")
		}
		h.Set(HeaderSignature, sigHeader)
		h.Set(HeaderTimestamp, tsHeader)
		if err := wh.Verify(body, h); err == nil && !strings.Contains(sigHeader, strings.TrimPrefix(sig, "v1,")) {
			t.Fatalf("signature header %q with timestamp %q verified without the signature", sigHeader, tsHeader)
		}
	})
}

// FuzzSignRefusesBadSecrets: a secret that is not whsec_<base64> is
// refused with ErrBadSecret (which never quotes it), never a panic.
func FuzzSignRefusesBadSecrets(f *testing.F) {
	for _, s := range []string{"whsec_AAAA", "whsec_", "whsec_!!", "AAAA", "", "whsec_AAAA===="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, secret string) {
		sig, err := Sign(secret, "m", time.Unix(1, 0), []byte("{}"))
		if err != nil {
			if err != ErrBadSecret {
				t.Fatalf("Sign(%q) error %v, want ErrBadSecret", secret, err)
			}
			return
		}
		if !strings.HasPrefix(sig, "v1,") {
			t.Fatalf("Sign(%q) = %q, want v1,...", secret, sig)
		}
	})
}
