package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// accountView is GET /v1/account: the upstream key check plus the secret
// that signs this key's callbacks.
type accountView struct {
	connector.Account
	WebhookSecret string `json:"webhook_secret"`
}

// getAccount is GET /v1/account, the platforms' "test connection". It asks
// the upstream every time (and refreshes the preflight cache): a user
// testing a connection wants the live balance.
func (s *Server) getAccount(c echo.Context) error {
	key := apiKey(c)
	acct, err := s.cfg.Keys.Refresh(s.requestContext(c), key)
	if err != nil {
		return err
	}
	secret, err := s.callbackSecret(c, s.owner(key))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, accountView{Account: *acct, WebhookSecret: secret})
}
