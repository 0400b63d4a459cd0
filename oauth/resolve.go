package oauth

import (
	"context"
	"sort"
	"strings"
	"time"
)

// IsAccessToken reports whether a bearer token is one of this server's
// access tokens (by its prefix), so an API key costs no Redis read.
func IsAccessToken(token string) bool { return strings.HasPrefix(token, AccessPrefix) }

// ResolveToken is the token check of /mcp: the API key an access token
// acts as, in one Redis read and no process-local cache, so a revocation
// holds on every replica from the next request. ok is false for a token
// that is unknown, expired, revoked or bound to another resource.
func (s *Server) ResolveToken(ctx context.Context, token string) (key string, ok bool, err error) {
	if !IsAccessToken(token) {
		return "", false, nil
	}
	a, found, err := s.cfg.Store.Access(ctx, hashOf(token))
	if err != nil || !found {
		return "", false, err
	}
	if s.cfg.Now().After(a.ExpiresAt) || a.Resource != s.resource {
		return "", false, nil
	}
	key, err = s.cfg.Keyring.Open(a.SealedKey)
	if err != nil {
		// Sealed under another IMGFLOW_SECRET: the token cannot act.
		s.cfg.Logger.Warn("oauth: access token's key does not open", "grant", a.GrantID)
		return "", false, nil
	}
	return key, true, nil
}

// App is a grant as the console lists it: a connected app of a key.
type App struct {
	ID          string
	ClientID    string
	ClientName  string
	CreatedAt   time.Time
	RefreshedAt time.Time
}

// Apps are the grants of the key whose hash is owner.
func (s *Server) Apps(ctx context.Context, owner string) ([]App, error) {
	grants, err := s.cfg.Store.Grants(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := make([]App, 0, len(grants))
	for _, g := range grants {
		out = append(out, App{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, CreatedAt: g.CreatedAt, RefreshedAt: g.RefreshedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// RevokeApp revokes one of owner's grants with all its tokens; false when
// owner has no such grant.
func (s *Server) RevokeApp(ctx context.Context, owner, id string) (bool, error) {
	g, ok, err := s.cfg.Store.Grant(ctx, id)
	if err != nil || !ok || g.Owner != owner {
		return false, err
	}
	return s.cfg.Store.RevokeGrant(ctx, g)
}
