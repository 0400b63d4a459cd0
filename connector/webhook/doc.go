// Package webhook signs and sends imgflow's callbacks and hook deliveries
// the Standard Webhooks way (webhook-id, webhook-timestamp,
// webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>"),
// through the SSRF guard, without following redirects. It sends one
// attempt and reports what came back; scheduling retries is the caller's.
package webhook
