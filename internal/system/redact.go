package system

import (
	"net/url"
	"strings"
)

// secretQueryKeys are query parameters whose values are credentials in the
// URLs imgflow prints (Redis and S3 URLs, and their endpoints).
var secretQueryKeys = []string{"password", "pass", "pwd", "secret", "token", "key", "access_key", "secret_key", "sentinel_password", "auth", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token"}

// RedactURL is raw fit to print: the userinfo password and the values of
// secret-looking query parameters replaced by "xxxxx". A URL that does not
// parse prints as "(unreadable URL)", since where its secret sits is
// unknown.
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	q := u.Query()
	changed := false
	for k, vs := range q {
		if isSecretKey(k) {
			for i := range vs {
				vs[i] = "xxxxx"
			}
			changed = true
		} else {
			for i, v := range vs {
				// A URL inside a URL (an S3 endpoint, a cluster's addr)
				// may carry its own userinfo.
				if strings.Contains(v, "@") && strings.Contains(v, "://") {
					vs[i] = RedactURL(v)
					changed = changed || vs[i] != v
				}
			}
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range secretQueryKeys {
		if k == s {
			return true
		}
	}
	return false
}

// urlSecrets are the secret parts of raw: its password and its secret
// query values, each as written and decoded.
func urlSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 3 {
			out = append(out, s, url.QueryEscape(s), url.PathEscape(s))
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Not parseable: the text between "://" and "@" is userinfo.
		if i, j := strings.Index(raw, "://"), strings.LastIndex(raw, "@"); i >= 0 && j > i {
			info := raw[i+3 : j]
			if k := strings.Index(info, ":"); k >= 0 {
				add(info[k+1:])
			}
		}
		return out
	}
	if p, ok := u.User.Password(); ok {
		add(p)
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			if isSecretKey(k) {
				add(v)
			} else if strings.Contains(v, "://") {
				out = append(out, urlSecrets(v)...)
			}
		}
	}
	return out
}

// scrub replaces every secret of the URLs in msg (an error from a library
// that may quote them) with "xxxxx".
func scrub(msg string, urls ...string) string {
	for _, raw := range urls {
		for _, s := range urlSecrets(raw) {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}

// scrubbedError is an error whose text carries no secret of the URLs it
// was made about; errors.Is and As still see the cause.
type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.cause }

// scrubError is err with the secrets of urls taken out of its text.
func scrubError(err error, urls ...string) error {
	if err == nil {
		return nil
	}
	msg := scrub(err.Error(), urls...)
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg: msg, cause: err}
}
