// Package keyring holds imgflow's secret-derived material: the hashes that
// stand for API keys, API keys sealed at rest (AES-GCM), webhook signing
// secrets, and the signed tokens of file URLs. Everything derives from one
// secret (IMGFLOW_SECRET), so many processes agree without sharing state.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Keyring derives keys from one secret. The zero value is not usable.
type Keyring struct {
	secret []byte
	aead   cipher.AEAD
}

// New returns a Keyring for secret, which must be at least 16 bytes.
func New(secret string) (*Keyring, error) {
	if len(secret) < 16 {
		return nil, errors.New("keyring: secret must be at least 16 characters")
	}
	k := &Keyring{secret: []byte(secret)}
	block, err := aes.NewCipher(k.derive("seal")[:32])
	if err != nil {
		return nil, err
	}
	if k.aead, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	return k, nil
}

// derive returns HMAC-SHA256(secret, purpose|parts...): one independent key
// per purpose, so a file token can never be replayed as a webhook secret.
func (k *Keyring) derive(purpose string, parts ...string) []byte {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(purpose))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// KeyHash is the stand-in for an API key wherever imgflow needs to name its
// owner (records, cache keys, logs): keyed, so a leaked store cannot be
// brute-forced offline without the secret.
func (k *Keyring) KeyHash(apiKey string) string {
	return hex.EncodeToString(k.derive("key", apiKey)[:16])
}

// Seal encrypts an API key for the worker, which must send it upstream.
func (k *Keyring) Seal(apiKey string) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return k.aead.Seal(nonce, nonce, []byte(apiKey), nil)
}

// Open decrypts what Seal made.
func (k *Keyring) Open(sealed []byte) (string, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("keyring: sealed key too short")
	}
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return "", errors.New("keyring: sealed key does not open with this secret")
	}
	return string(plain), nil
}

// WebhookSecret is the Standard Webhooks secret ("whsec_" + base64 of 32
// bytes) for an owner's callbacks (scope "callback", id = key hash) or for one
// hook subscription (scope "hook", id = hook id).
func (k *Keyring) WebhookSecret(scope, id string) string {
	return "whsec_" + base64.StdEncoding.EncodeToString(k.derive("webhook", scope, id))
}

// WebhookSecretVersion is WebhookSecret after version rotations: version 0
// is WebhookSecret itself, so secrets issued before rotation existed stay
// valid.
func (k *Keyring) WebhookSecretVersion(scope, id string, version int) string {
	if version <= 0 {
		return k.WebhookSecret(scope, id)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(k.derive("webhook", scope, id, "v"+strconv.Itoa(version)))
}

// WebhookSecrets are the secrets of the given versions, in order.
func (k *Keyring) WebhookSecrets(scope, id string, versions []int) []string {
	out := make([]string, len(versions))
	for i, v := range versions {
		out[i] = k.WebhookSecretVersion(scope, id, v)
	}
	return out
}

// FileToken signs access to a job's file until exp: "<unix>.<mac>".
func (k *Keyring) FileToken(jobID string, exp time.Time) string {
	ts := strconv.FormatInt(exp.Unix(), 10)
	mac := k.derive("file", jobID, ts)[:18]
	return ts + "." + base64.RawURLEncoding.EncodeToString(mac)
}

// VerifyFileToken reports whether token grants access to jobID at now.
func (k *Keyring) VerifyFileToken(jobID, token string, now time.Time) bool {
	ts, macText, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Unix() > exp {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(macText)
	if err != nil {
		return false
	}
	return hmac.Equal(got, k.derive("file", jobID, ts)[:18])
}

// FileURL is the signed address of a job's compressed file under publicURL
// (the server's public base, without a trailing slash). It works without the
// API key until exp, so later flow steps can download the result.
func (k *Keyring) FileURL(publicURL, jobID string, exp time.Time) string {
	return publicURL + "/v1/jobs/" + jobID + "/file?token=" + k.FileToken(jobID, exp)
}

// View is the one public view of jobs and batches (connector.View) with
// this keyring's signed links under publicURL: the API's answers and the
// webhook payloads are built from it alike. fileURL, when set, makes the
// file_url instead (presigned S3 objects).
func (k *Keyring) View(publicURL string, resultTTL time.Duration, fileURL func(*connector.Job, time.Time) string) connector.View {
	if fileURL == nil {
		fileURL = func(j *connector.Job, exp time.Time) string { return k.FileURL(publicURL, j.ID, exp) }
	}
	return connector.View{PublicURL: publicURL, ResultTTL: resultTTL, FileURL: fileURL,
		ArchiveURL: func(batchID string, exp time.Time) string { return k.ArchiveURL(publicURL, batchID, exp) }}
}

// ArchiveURL is the signed address of a batch's ZIP archive under
// publicURL, working without the API key until exp, as FileURL does for
// one job's file (the token is scoped to the batch, never valid for a job).
func (k *Keyring) ArchiveURL(publicURL, batchID string, exp time.Time) string {
	return publicURL + "/v1/batches/" + batchID + "/archive?token=" + k.FileToken(archiveScope(batchID), exp)
}

// VerifyArchiveToken reports whether token grants access to the batch's
// archive at now.
func (k *Keyring) VerifyArchiveToken(batchID, token string, now time.Time) bool {
	return k.VerifyFileToken(archiveScope(batchID), token, now)
}

func archiveScope(batchID string) string { return "batch/" + batchID }

// FormToken is the CSRF token of a form for purpose over parts (a browser
// nonce, the request the form shows): only this server can make one.
func (k *Keyring) FormToken(purpose string, parts ...string) string {
	return base64.RawURLEncoding.EncodeToString(k.derive("form", append([]string{purpose}, parts...)...))
}

// VerifyFormToken reports whether token is FormToken(purpose, parts...).
func (k *Keyring) VerifyFormToken(token, purpose string, parts ...string) bool {
	got, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return false
	}
	return hmac.Equal(got, k.derive("form", append([]string{purpose}, parts...)...))
}
