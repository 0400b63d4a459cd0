package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector/keyring"
)

// Lifetimes of what the server issues.
const (
	// CodeTTL is how long an authorization code can be redeemed.
	CodeTTL = time.Minute
	// AccessTTL is an access token's life.
	AccessTTL = time.Hour
	// RefreshTTL is a refresh token's life; each refresh issues a new one.
	RefreshTTL = 30 * 24 * time.Hour
	// ClientTTL is how long a registered client is kept after its last use.
	ClientTTL = 90 * 24 * time.Hour
	// UnusedClientTTL is how long a registration is kept before its first
	// use: registrations nobody authorizes with (a flood of them) leave
	// Redis within the hour.
	UnusedClientTTL = time.Hour
	// RegistrationsPerMinute is how many dynamic registrations the server
	// takes a minute, from everyone (Config.RegistrationsPerMinute): with
	// UnusedClientTTL it bounds what anonymous callers can store.
	RegistrationsPerMinute = 60
	// DocumentTTL is how long a client ID metadata document is cached.
	DocumentTTL = 10 * time.Minute
)

// Token prefixes tell the server's token check an access token from an
// API key without asking Redis.
const (
	AccessPrefix  = "ifa_"
	RefreshPrefix = "ifr_"
	clientPrefix  = "ifc_"
)

// Config is what the authorization server needs.
type Config struct {
	// Store keeps clients, codes, grants and tokens. Required.
	Store *Store
	// Keyring seals the API keys grants act as and signs the consent
	// form's CSRF token. Required.
	Keyring *keyring.Keyring
	// PublicURL is the server's public base without a trailing slash: the
	// issuer, and the resource is PublicURL + "/mcp".
	PublicURL string
	// CheckKey is the API's key check: nil for a key the API would serve
	// (a zero balance included), else a *connector.Error.
	CheckKey func(ctx context.Context, key string) error
	// DocumentClient fetches client ID metadata documents. It must refuse
	// private addresses at the dial (guard.NewTransport); New's default
	// reaches public addresses only.
	DocumentClient *http.Client
	Logger         *slog.Logger
	// RegistrationsPerMinute caps dynamic registrations (0: the default
	// RegistrationsPerMinute).
	RegistrationsPerMinute int
	// Now is the clock; tests move it.
	Now func() time.Time
}

// Server is the authorization server.
type Server struct {
	cfg      Config
	issuer   string
	resource string
	mux      *http.ServeMux
}

// New builds the server with defaults filled in.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RegistrationsPerMinute <= 0 {
		cfg.RegistrationsPerMinute = RegistrationsPerMinute
	}
	if cfg.DocumentClient == nil {
		cfg.DocumentClient = defaultDocumentClient()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	s := &Server{cfg: cfg, issuer: cfg.PublicURL, resource: cfg.PublicURL + "/mcp"}
	s.mux = s.routes()
	return s
}

// wellKnown is the RFC 8615 address of a well-known document for an
// identifier (RFC 8414 section 3.1, RFC 9728 section 3.1): the suffix goes
// between the host and the identifier's path.
func wellKnown(identifier, suffix string) string {
	u, err := url.Parse(identifier)
	if err != nil {
		return identifier + "/.well-known/" + suffix
	}
	path := strings.TrimRight(u.Path, "/")
	u.Path = "/.well-known/" + suffix + path
	return u.String()
}

// pathOf is the path of an absolute URL.
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

// ResourceMetadataURL is where the protected resource metadata of /mcp
// is: the 401's WWW-Authenticate names it.
func (s *Server) ResourceMetadataURL() string {
	return wellKnown(s.resource, "oauth-protected-resource")
}

// route is one of the server's routes; open ones answer browsers of any
// origin (CORS), for MCP clients that run in a web page.
type route struct {
	method, path string
	handler      http.HandlerFunc
	open         bool
}

func (s *Server) table() []route {
	return []route{
		{http.MethodGet, pathOf(wellKnown(s.issuer, "oauth-protected-resource")), s.resourceMetadata(s.issuer), true},
		{http.MethodGet, pathOf(s.ResourceMetadataURL()), s.resourceMetadata(s.resource), true},
		{http.MethodGet, pathOf(wellKnown(s.issuer, "oauth-authorization-server")), s.serverMetadata, true},
		{http.MethodGet, s.endpointPath("authorize"), s.authorizePage, false},
		{http.MethodPost, s.endpointPath("authorize"), s.authorizeConsent, false},
		{http.MethodPost, s.endpointPath("token"), s.token, true},
		{http.MethodPost, s.endpointPath("register"), s.register, true},
		{http.MethodPost, s.endpointPath("revoke"), s.revoke, true},
	}
}

func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	for _, rt := range s.table() {
		h := rt.handler
		if rt.open {
			h = anyOrigin(h)
			m.HandleFunc(http.MethodOptions+" "+rt.path, anyOrigin(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}))
		}
		m.HandleFunc(rt.method+" "+rt.path, h)
	}
	return m
}

// anyOrigin lets pages of any origin call h: the metadata, token,
// registration and revocation endpoints take no cookie, so an origin
// gains nothing a server-side client has not.
func anyOrigin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", "*")
		hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		hd.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
		hd.Set("Access-Control-Max-Age", "3600")
		h(w, r)
	}
}

// Routes are the method and path of every route Handler serves, for the
// API to mount.
func (s *Server) Routes() [][2]string {
	var out [][2]string
	for _, rt := range s.table() {
		out = append(out, [2]string{rt.method, rt.path})
		if rt.open {
			out = append(out, [2]string{http.MethodOptions, rt.path})
		}
	}
	return out
}

// Handler serves every route of Routes.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) endpointPath(name string) string { return pathOf(s.issuer) + "/" + name }
func (s *Server) endpoint(name string) string     { return s.issuer + "/" + name }

// newSecret is 32 random bytes, base64url, after prefix.
func newSecret(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// newID is a shorter random id (grants, clients).
func newID(prefix string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b)
}

// hashOf is the name a secret is stored under: its SHA-256. The secrets
// are 256 random bits, so no key is needed to make the hash useless to a
// reader of the store.
func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
