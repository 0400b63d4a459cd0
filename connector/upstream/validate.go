package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/imgflow/imgflow/connector"
)

// validateAnswer is the 200 body of /validate; can_compress is the older
// listing's optional field.
type validateAnswer struct {
	Valid            *bool  `json:"valid"`
	UserID           string `json:"user_id"`
	SubscriptionType string `json:"subscription_type"`
	CreditsRemaining int64  `json:"credits_remaining"`
	MaxImageSize     int64  `json:"max_image_size"`
	CanCompress      *bool  `json:"can_compress"`
}

// invalidKey is the one answer for a bad key, whichever way it was said.
func invalidKey(status int) *connector.Error {
	return &connector.Error{Code: connector.EUNAUTHORIZED, Message: "Invalid API key", UpstreamStatus: status}
}

// Validate checks apiKey with POST /validate; it costs no credit. An invalid
// key is EUNAUTHORIZED whether the upstream answers 401, 400 or 200 with
// valid:false. 5xx, other statuses, unreadable answers, network errors and
// timeouts are EUPSTREAM, Retryable.
func (c *Client) Validate(ctx context.Context, apiKey string) (*connector.Account, error) {
	payload, err := json.Marshal(map[string]string{"api_key": apiKey})
	if err != nil {
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/validate", bytes.NewReader(payload))
	if err != nil {
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, body, err := c.do(req, maxSmallAnswer, c.checkTimeout)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest, http.StatusUnauthorized:
		return nil, invalidKey(resp.StatusCode)
	default:
		if eb, ok := parseErrorBody(body); ok {
			return nil, unexpected(resp.StatusCode, "%s", eb.Error)
		}
		return nil, unexpected(resp.StatusCode, "compression API answered %s", statusText(resp.StatusCode))
	}
	var a validateAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.Valid == nil {
		e := unexpected(http.StatusOK, "compression API answered 200 to a key check without valid")
		e.Err = err
		return nil, e
	}
	if !*a.Valid {
		return nil, invalidKey(http.StatusOK)
	}
	return &connector.Account{
		Valid:            true,
		UserID:           a.UserID,
		SubscriptionType: a.SubscriptionType,
		CreditsRemaining: a.CreditsRemaining,
		MaxImageSize:     a.MaxImageSize,
		CanCompress:      a.CanCompress,
	}, nil
}

// Health calls GET /health: nil when the API answers 200 with status
// "healthy", EUPSTREAM (Retryable) otherwise.
func (c *Client) Health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+"/health", nil)
	if err != nil {
		return &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	resp, body, err := c.do(req, maxSmallAnswer, c.checkTimeout)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return unexpected(resp.StatusCode, "compression API health check answered %s", statusText(resp.StatusCode))
	}
	var h struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "healthy" {
		return unexpected(http.StatusOK, "compression API health check did not report healthy")
	}
	return nil
}
