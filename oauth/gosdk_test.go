package oauth_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// The official Go SDK's client runs its own OAuth flow against the whole
// system: discovery from the 401, dynamic registration, PKCE, the consent
// (filled here over HTTP as a browser would), the iss check, the exchange,
// then tools with the token.
func TestGoSDKClientRunsTheOAuthFlow(t *testing.T) {
	s := systemtest.Start(t)
	c := newClient(t, s.API)
	consents := 0
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "Go agent", RedirectURIs: []string{c.redirect}, GrantTypes: []string{"authorization_code", "refresh_token"},
			TokenEndpointAuthMethod: "none"}},
		RedirectURL: c.redirect,
		AuthorizationCodeFetcher: func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			consents++
			u, err := url.Parse(args.URL)
			if err != nil {
				return nil, err
			}
			q := u.Query()
			if q.Get("code_challenge_method") != "S256" || q.Get("resource") != s.API+"/mcp" {
				t.Errorf("the Go SDK's authorization request %s: want S256 and resource %s/mcp", args.URL, s.API)
			}
			c.id = q.Get("client_id")
			p := c.consent(q, s.Key, "allow")
			back := p.location.Query()
			return &auth.AuthorizationResult{Code: back.Get("code"), State: back.Get("state"), Iss: back.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-agent", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: s.API + "/mcp", OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("connect with the Go SDK's OAuth: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "check_account", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("check_account: %v %+v", err, res)
	}
	if got, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(got), `"credits_remaining":500`) {
		t.Errorf("check_account with the Go SDK's token: %s; want the key's 500 credits", got)
	}
	if consents != 1 {
		t.Errorf("the consent page was filled %d times; want once", consents)
	}
}
