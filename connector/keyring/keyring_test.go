package keyring

import (
	"strings"
	"testing"
	"time"
)

func newTestKeyring(t *testing.T, secret string) *Keyring {
	t.Helper()
	k, err := New(secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpensOnlyWithTheSameSecret(t *testing.T) {
	a := newTestKeyring(t, "0123456789abcdef-a")
	b := newTestKeyring(t, "0123456789abcdef-b")
	sealed := a.Seal("sk_live_123")
	if strings.Contains(string(sealed), "sk_live_123") {
		t.Fatal("sealed key contains the plain key")
	}
	got, err := a.Open(sealed)
	if err != nil || got != "sk_live_123" {
		t.Fatalf("Open = %q, %v; want the key back", got, err)
	}
	if _, err := b.Open(sealed); err == nil {
		t.Fatal("Open with another secret succeeded")
	}
}

func TestKeyHashIsStableAndKeyed(t *testing.T) {
	a := newTestKeyring(t, "0123456789abcdef-a")
	b := newTestKeyring(t, "0123456789abcdef-b")
	// Two keyrings with the same secret: the hash is a function of the
	// key and the secret only, so a stored hash matches after a restart.
	again := newTestKeyring(t, "0123456789abcdef-a")
	if a.KeyHash("k1") != again.KeyHash("k1") || a.KeyHash("k1") == a.KeyHash("k2") {
		t.Fatal("KeyHash must be stable per key and differ between keys")
	}
	if a.KeyHash("k1") == b.KeyHash("k1") {
		t.Fatal("KeyHash must depend on the secret")
	}
}

func TestFileTokenExpiresAndIsBoundToTheJob(t *testing.T) {
	k := newTestKeyring(t, "0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	tok := k.FileToken("job-1", now.Add(time.Hour))
	if !k.VerifyFileToken("job-1", tok, now) {
		t.Fatal("fresh token rejected")
	}
	if k.VerifyFileToken("job-2", tok, now) {
		t.Fatal("token accepted for another job")
	}
	if k.VerifyFileToken("job-1", tok, now.Add(2*time.Hour)) {
		t.Fatal("expired token accepted")
	}
	if k.VerifyFileToken("job-1", tok+"x", now) || k.VerifyFileToken("job-1", "garbage", now) {
		t.Fatal("tampered token accepted")
	}
}

func TestWebhookSecretsDifferPerScope(t *testing.T) {
	k := newTestKeyring(t, "0123456789abcdef")
	s := k.WebhookSecret("callback", "x")
	if !strings.HasPrefix(s, "whsec_") || s == k.WebhookSecret("hook", "x") {
		t.Fatalf("secret %q: want whsec_ prefix and a different value per scope", s)
	}
}

func TestNewRejectsShortSecret(t *testing.T) {
	if _, err := New("short"); err == nil {
		t.Fatal("short secret accepted")
	}
}

func TestFormTokenBindsPurposeAndParts(t *testing.T) {
	k, _ := New("form-token-test-secret-0123")
	other, _ := New("another-secret-of-16-chars")
	tok := k.FormToken("consent", "nonce", "client", "state")
	if !k.VerifyFormToken(tok, "consent", "nonce", "client", "state") {
		t.Fatal("a form token does not verify against what it was made for")
	}
	for name, ok := range map[string]bool{
		"another part":    k.VerifyFormToken(tok, "consent", "nonce", "client", "other-state"),
		"another purpose": k.VerifyFormToken(tok, "other", "nonce", "client", "state"),
		"parts joined":    k.VerifyFormToken(tok, "consent", "nonceclient", "state"),
		"another secret":  other.VerifyFormToken(tok, "consent", "nonce", "client", "state"),
		"not base64":      k.VerifyFormToken("%%%", "consent", "nonce", "client", "state"),
	} {
		if ok {
			t.Errorf("%s: the form token verifies; want refused", name)
		}
	}
}
