package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector/guard"
)

// Limits of a client ID metadata document fetch.
const (
	documentMaxBytes = 16 << 10
	documentTimeout  = 5 * time.Second
)

// errUnknownClient is a client_id that names no client.
var errUnknownClient = errors.New("unknown client_id")

// client finds the client a client_id names: one registered here, or the
// client ID metadata document at an https client_id (cached for
// DocumentTTL). An error that is not a storage failure means the client_id
// is not usable; its text can be shown to the user.
func (s *Server) client(ctx context.Context, id string) (*Client, error) {
	if strings.HasPrefix(id, "https://") {
		return s.documentClient(ctx, id)
	}
	if !strings.HasPrefix(id, clientPrefix) {
		return nil, errUnknownClient
	}
	c, ok, err := s.cfg.Store.Client(ctx, id, ClientTTL)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errUnknownClient
	}
	return c, nil
}

// documentError is a client ID metadata document that cannot be used.
type documentError struct{ reason string }

func (e *documentError) Error() string { return "client metadata document: " + e.reason }

// documentClient reads the client ID metadata document at id: from the
// cache, else fetched through the SSRF-guarded client with a size and a
// time limit, no redirects, and checked (its client_id must be its URL;
// its redirect_uris are the ones authorize matches exactly).
func (s *Server) documentClient(ctx context.Context, id string) (*Client, error) {
	if err := checkDocumentURL(id); err != nil {
		return nil, err
	}
	h := hashOf(id)
	if c, ok, err := s.cfg.Store.CachedDocument(ctx, h); err != nil || ok {
		return c, err
	}
	c, err := s.fetchDocument(ctx, id)
	if err != nil {
		s.cfg.Logger.Info("oauth: client metadata document refused", "client_id", id, "reason", err.Error())
		return nil, err
	}
	if err := s.cfg.Store.CacheDocument(ctx, h, c, DocumentTTL); err != nil {
		return nil, err
	}
	return c, nil
}

// checkDocumentURL holds a URL client_id to the rules of client ID
// metadata documents: https, a path, no fragment, no credentials, no dot
// segments.
func checkDocumentURL(id string) error {
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return &documentError{"client_id must be an https URL"}
	}
	if u.Path == "" || u.Path == "/" || u.Fragment != "" || u.User != nil {
		return &documentError{"client_id URL needs a path and no fragment or credentials"}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return &documentError{"client_id URL must not have dot segments"}
		}
	}
	return nil
}

func (s *Server) fetchDocument(ctx context.Context, id string) (*Client, error) {
	ctx, cancel := context.WithTimeout(ctx, documentTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, &documentError{"bad URL"}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.DocumentClient.Do(req)
	if err != nil {
		return nil, &documentError{"cannot be fetched: " + fetchReason(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &documentError{fmt.Sprintf("answered HTTP %d", resp.StatusCode)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, documentMaxBytes+1))
	if err != nil {
		return nil, &documentError{"cannot be read: " + fetchReason(err)}
	}
	if len(body) > documentMaxBytes {
		return nil, &documentError{fmt.Sprintf("is larger than %d bytes", documentMaxBytes)}
	}
	var doc struct {
		ClientID     string   `json:"client_id"`
		ClientName   string   `json:"client_name"`
		ClientURI    string   `json:"client_uri"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		ClientSecret string   `json:"client_secret"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, &documentError{"is not a JSON object"}
	}
	if doc.ClientID != id {
		return nil, &documentError{"its client_id is not its URL"}
	}
	if doc.ClientSecret != "" || (doc.AuthMethod != "" && doc.AuthMethod != "none") {
		return nil, &documentError{"only public clients (token_endpoint_auth_method none) are accepted"}
	}
	if err := checkRedirectURIs(doc.RedirectURIs); err != nil {
		return nil, &documentError{err.Error()}
	}
	return &Client{ID: id, Name: clientName(doc.ClientName, id), URI: doc.ClientURI, RedirectURIs: doc.RedirectURIs,
		CreatedAt: s.cfg.Now()}, nil
}

// fetchReason is a fetch error without the URL (which the caller has).
func fetchReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// defaultDocumentClient reaches public addresses only, refused at the dial
// (guard), and follows no redirect.
func defaultDocumentClient() *http.Client {
	return DocumentClient(guard.Policy{})
}

// DocumentClient is the client that fetches client ID metadata documents
// for addresses p allows besides public ones: the guard's transport (every
// dial checked), a time limit, no redirects.
func DocumentClient(p guard.Policy) *http.Client {
	return &http.Client{
		Transport: guard.NewTransport(p),
		Timeout:   documentTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		},
	}
}

// checkRedirectURIs accepts one to ten redirect URIs, each https or
// http on loopback, absolute, without a fragment.
func checkRedirectURIs(uris []string) error {
	if len(uris) == 0 {
		return errors.New("redirect_uris is required")
	}
	if len(uris) > 10 {
		return errors.New("at most 10 redirect_uris")
	}
	for _, raw := range uris {
		if err := checkRedirectURI(raw); err != nil {
			return fmt.Errorf("redirect_uri %q: %v", raw, err)
		}
	}
	return nil
}

// maxURILength bounds every URI a client registers.
const maxURILength = 2048

func checkRedirectURI(raw string) error {
	if len(raw) > maxURILength {
		return errors.New("is longer than 2,048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return errors.New("must be an absolute URL")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must not have a fragment")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("http is allowed on loopback only (127.0.0.1, [::1], localhost); use https")
	}
	return errors.New("must be https, or http on loopback")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// allowsRedirect reports whether uri is one of the client's redirect URIs,
// compared as strings, exactly.
func (c *Client) allowsRedirect(uri string) bool {
	return slices.Contains(c.RedirectURIs, uri)
}

// clientName is what the consent page calls a client: its name, else its
// id; at most 80 characters.
func clientName(name, id string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = id
	}
	if r := []rune(name); len(r) > 80 {
		name = string(r[:80]) + "…"
	}
	return name
}
