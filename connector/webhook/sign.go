package webhook

import (
	"errors"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Standard Webhooks header names.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// ErrBadSecret is returned for a secret that is not "whsec_" followed by
// standard base64. The secret itself never appears in an error.
var ErrBadSecret = errors.New("webhook: signing secret is not whsec_<base64>")

// ErrNoMessageID is returned for an empty message id: receivers' Standard
// Webhooks libraries refuse a delivery without webhook-id, so its
// signature could never be verified.
var ErrNoMessageID = errors.New("webhook: message id is empty")

// Sign returns the webhook-signature value for one message: "v1," and the
// base64 HMAC-SHA256, keyed with the decoded secret, of
// "<msgID>.<unix seconds of ts>.<body>". It is the reference library's
// signature, so receivers can verify with any Standard Webhooks library.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	if msgID == "" {
		return "", ErrNoMessageID
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return "", ErrBadSecret
	}
	return wh.Sign(msgID, ts, body)
}

// ErrNoSecret is returned by SignAll without a secret.
var ErrNoSecret = errors.New("webhook: no signing secret")

// SignAll returns the webhook-signature value with one signature per
// secret, space-separated: receivers accept the message when any of them
// verifies, so a secret can be rotated without a gap.
func SignAll(secrets []string, msgID string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", ErrNoSecret
	}
	sigs := make([]string, len(secrets))
	for i, secret := range secrets {
		sig, err := Sign(secret, msgID, ts, body)
		if err != nil {
			return "", err
		}
		sigs[i] = sig
	}
	return strings.Join(sigs, " "), nil
}
