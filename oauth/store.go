package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

// Store keeps the authorization server's state in Redis, so every serve
// replica answers every step of a flow. Tokens and codes are stored under
// the SHA-256 of their value, never the value; the API key a grant acts as
// is stored sealed (keyring.Seal). Keys, under the prefix:
//
//	oauth:client:{id}          JSON registered client (RFC 7591), TTL UnusedClientTTL, then ClientTTL renewed on use
//	oauth:registrations:{min}  count of the minute's dynamic registrations, TTL 2 minutes
//	oauth:cimd:{url hash}      JSON client ID metadata document, TTL DocumentTTL
//	oauth:code:{hash}          JSON authorization code, TTL CodeTTL, taken once (GETDEL)
//	oauth:grant:{id}           JSON grant: a client acting as a key (owner, client, sealed key)
//	oauth:grants:{owner}       set of the owner's grant ids (the connected apps)
//	oauth:grant:{id}:tokens    set of the Redis keys of the grant's tokens, deleted with it
//	oauth:at:{hash}            JSON access token, TTL AccessTTL
//	oauth:rt:{hash}            JSON refresh token, TTL RefreshTTL
//	oauth:rtused:{hash}        a used refresh token's grant id, TTL RefreshTTL (reuse revokes the grant)
//
// The part in braces is the Redis Cluster hash tag: a refresh token's two
// keys share a slot, so its use is one script; everything else is one key
// per command or a plain pipeline.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewStore returns a Store on rdb with every key under prefix ("imgflow:"
// when empty).
func NewStore(rdb redis.UniversalClient, prefix string) *Store {
	if prefix == "" {
		prefix = "imgflow:"
	}
	return &Store{rdb: rdb, prefix: prefix + "oauth:"}
}

// Client is a client the server knows: registered (RFC 7591) or read from
// its client ID metadata document.
type Client struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name,omitempty"`
	RedirectURIs []string  `json:"redirect_uris"`
	URI          string    `json:"client_uri,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

// Code is an authorization code's record: what the consent allowed and
// what the token request must repeat.
type Code struct {
	ClientID    string    `json:"client_id"`
	ClientName  string    `json:"client_name"`
	RedirectURI string    `json:"redirect_uri"`
	Challenge   string    `json:"code_challenge"`
	Resource    string    `json:"resource"`
	Scope       string    `json:"scope,omitempty"`
	Owner       string    `json:"owner"`
	SealedKey   []byte    `json:"sealed_key"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Grant is one authorization: a client acting as an API key until it is
// revoked or its refresh tokens run out. The console lists them as the
// key's connected apps.
type Grant struct {
	ID          string    `json:"id"`
	Owner       string    `json:"owner"`
	ClientID    string    `json:"client_id"`
	ClientName  string    `json:"client_name"`
	Resource    string    `json:"resource"`
	Scope       string    `json:"scope,omitempty"`
	SealedKey   []byte    `json:"sealed_key"`
	CreatedAt   time.Time `json:"created_at"`
	RefreshedAt time.Time `json:"refreshed_at"`
}

// Access is an access token's record: enough to act as the key in one read.
type Access struct {
	GrantID   string    `json:"grant_id"`
	ClientID  string    `json:"client_id"`
	Owner     string    `json:"owner"`
	Resource  string    `json:"resource"`
	SealedKey []byte    `json:"sealed_key"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Refresh is a refresh token's record.
type Refresh struct {
	GrantID   string    `json:"grant_id"`
	ClientID  string    `json:"client_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *Store) clientKey(id string) string      { return s.prefix + "client:{" + id + "}" }
func (s *Store) documentKey(h string) string     { return s.prefix + "cimd:{" + h + "}" }
func (s *Store) codeKey(h string) string         { return s.prefix + "code:{" + h + "}" }
func (s *Store) grantKey(id string) string       { return s.prefix + "grant:{" + id + "}" }
func (s *Store) grantTokensKey(id string) string { return s.prefix + "grant:{" + id + "}:tokens" }
func (s *Store) ownerKey(owner string) string    { return s.prefix + "grants:{" + owner + "}" }
func (s *Store) accessKey(h string) string       { return s.prefix + "at:{" + h + "}" }
func (s *Store) refreshKey(h string) string      { return s.prefix + "rt:{" + h + "}" }
func (s *Store) usedKey(h string) string         { return s.prefix + "rtused:{" + h + "}" }

// CountRegistration counts one dynamic registration in the minute of now
// and returns the minute's count so far.
func (s *Store) CountRegistration(ctx context.Context, now time.Time) (int64, error) {
	key := s.prefix + "registrations:{" + strconv.FormatInt(now.Unix()/60, 10) + "}"
	var n *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.Incr(ctx, key)
		p.Expire(ctx, key, 2*time.Minute)
		return nil
	})
	if err != nil {
		return 0, storageErr(err)
	}
	return n.Val(), nil
}

// PutClient stores a registered client for ttl.
func (s *Store) PutClient(ctx context.Context, c *Client, ttl time.Duration) error {
	return s.putJSON(ctx, s.clientKey(c.ID), c, ttl)
}

// Client reads a registered client and renews it for ttl: a client in use
// stays, one registered and never used expires.
func (s *Store) Client(ctx context.Context, id string, ttl time.Duration) (*Client, bool, error) {
	var c Client
	ok, err := s.getJSON(ctx, s.clientKey(id), &c)
	if ok && err == nil {
		err = storageErr(s.rdb.Expire(ctx, s.clientKey(id), ttl).Err())
	}
	return &c, ok, err
}

// CacheDocument keeps a client ID metadata document (by the hash of its
// URL) for ttl.
func (s *Store) CacheDocument(ctx context.Context, urlHash string, c *Client, ttl time.Duration) error {
	return s.putJSON(ctx, s.documentKey(urlHash), c, ttl)
}

// CachedDocument is a document CacheDocument kept.
func (s *Store) CachedDocument(ctx context.Context, urlHash string) (*Client, bool, error) {
	var c Client
	ok, err := s.getJSON(ctx, s.documentKey(urlHash), &c)
	return &c, ok, err
}

// PutCode stores an authorization code's record until it expires.
func (s *Store) PutCode(ctx context.Context, hash string, c *Code) error {
	return s.putJSON(ctx, s.codeKey(hash), c, time.Until(c.ExpiresAt))
}

// TakeCode reads and deletes a code's record in one command: a code is
// redeemed once, whichever replica sees it first.
func (s *Store) TakeCode(ctx context.Context, hash string) (*Code, bool, error) {
	raw, err := s.rdb.GetDel(ctx, s.codeKey(hash)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storageErr(err)
	}
	var c Code
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, false, err
	}
	return &c, true, nil
}

// PutGrant stores a grant for ttl and lists it under its owner.
func (s *Store) PutGrant(ctx context.Context, g *Grant, ttl time.Duration) error {
	raw, err := json.Marshal(g)
	if err != nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.grantKey(g.ID), raw, ttl)
		p.SAdd(ctx, s.ownerKey(g.Owner), g.ID)
		return nil
	})
	return storageErr(err)
}

// Grant reads a grant; a revoked or expired grant is not found.
func (s *Store) Grant(ctx context.Context, id string) (*Grant, bool, error) {
	var g Grant
	ok, err := s.getJSON(ctx, s.grantKey(id), &g)
	return &g, ok, err
}

// Grants are the owner's grants; ids whose grant expired are dropped from
// the owner's set on the way.
func (s *Store) Grants(ctx context.Context, owner string) ([]*Grant, error) {
	ids, err := s.rdb.SMembers(ctx, s.ownerKey(owner)).Result()
	if err != nil {
		return nil, storageErr(err)
	}
	cmds := make([]*redis.StringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.Get(ctx, s.grantKey(id))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, storageErr(err)
	}
	var out []*Grant
	var gone []any
	for i, cmd := range cmds {
		raw, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			gone = append(gone, ids[i])
			continue
		}
		var g Grant
		if err != nil || json.Unmarshal(raw, &g) != nil {
			continue
		}
		out = append(out, &g)
	}
	if len(gone) > 0 {
		if err := s.rdb.SRem(ctx, s.ownerKey(owner), gone...).Err(); err != nil {
			return nil, storageErr(err)
		}
	}
	return out, nil
}

// RevokeGrant deletes a grant with every token it issued, so none of them
// works on any replica from the next request on. It reports whether the
// grant existed.
func (s *Store) RevokeGrant(ctx context.Context, g *Grant) (bool, error) {
	tokens, err := s.rdb.SMembers(ctx, s.grantTokensKey(g.ID)).Result()
	if err != nil {
		return false, storageErr(err)
	}
	var deleted *redis.IntCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range tokens {
			p.Del(ctx, k)
		}
		deleted = p.Del(ctx, s.grantKey(g.ID))
		p.Del(ctx, s.grantTokensKey(g.ID))
		p.SRem(ctx, s.ownerKey(g.Owner), g.ID)
		return nil
	})
	if err != nil {
		return false, storageErr(err)
	}
	return deleted.Val() > 0, nil
}

// PutTokens stores an access token and a refresh token of a grant, lists
// them under the grant (so revoking it deletes them) and renews the grant
// for refreshTTL.
func (s *Store) PutTokens(ctx context.Context, g *Grant, accessHash string, a *Access, refreshHash string, r *Refresh) error {
	at, err := json.Marshal(a)
	if err != nil {
		return err
	}
	rt, err := json.Marshal(r)
	if err != nil {
		return err
	}
	gr, err := json.Marshal(g)
	if err != nil {
		return err
	}
	refreshTTL := time.Until(r.ExpiresAt)
	var kept *redis.BoolCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		// XX: a grant revoked since it was read is not brought back.
		kept = p.SetXX(ctx, s.grantKey(g.ID), gr, refreshTTL)
		p.Set(ctx, s.accessKey(accessHash), at, time.Until(a.ExpiresAt))
		p.Set(ctx, s.refreshKey(refreshHash), rt, refreshTTL)
		p.SAdd(ctx, s.grantTokensKey(g.ID), s.accessKey(accessHash), s.refreshKey(refreshHash))
		p.Expire(ctx, s.grantTokensKey(g.ID), refreshTTL)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return storageErr(err)
	}
	if !kept.Val() {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, s.accessKey(accessHash))
			p.Del(ctx, s.refreshKey(refreshHash))
			p.Del(ctx, s.grantTokensKey(g.ID))
			return nil
		})
		if err != nil {
			return storageErr(err)
		}
		return ErrGrantRevoked
	}
	return nil
}

// ErrGrantRevoked is PutTokens' answer for a grant revoked while its
// tokens were being made: they are deleted again.
var ErrGrantRevoked = errors.New("oauth: the grant was revoked")

// Access reads an access token's record: the one read a request with a
// token costs.
func (s *Store) Access(ctx context.Context, hash string) (*Access, bool, error) {
	var a Access
	ok, err := s.getJSON(ctx, s.accessKey(hash), &a)
	return &a, ok, err
}

// Refresh reads a refresh token's record without using it (revocation).
func (s *Store) Refresh(ctx context.Context, hash string) (*Refresh, bool, error) {
	var r Refresh
	ok, err := s.getJSON(ctx, s.refreshKey(hash), &r)
	return &r, ok, err
}

// DeleteAccess deletes one access token.
func (s *Store) DeleteAccess(ctx context.Context, hash string) error {
	return storageErr(s.rdb.Del(ctx, s.accessKey(hash)).Err())
}

// useRefresh takes a refresh token once: the record moves to the used
// marker in one step, so of two requests with one token exactly one gets
// the record; a token already used answers its grant id instead.
var useRefresh = redis.NewScript(`
local rec = redis.call('GET', KEYS[1])
if rec then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], cjson.decode(rec)['grant_id'], 'PX', ARGV[1])
  return {1, rec}
end
local used = redis.call('GET', KEYS[2])
if used then return {2, used} end
return {0, ''}
`)

// RefreshUse is what using a refresh token found.
type RefreshUse int

// The outcomes of UseRefresh.
const (
	RefreshUnknown RefreshUse = iota // never issued, expired, or its grant was revoked
	RefreshFresh                     // first use: the record is returned
	RefreshReused                    // used before: the grant id is returned, to revoke
)

// UseRefresh spends a refresh token: the first use returns its record,
// every later use returns the grant id of the token (keeping the marker
// for ttl).
func (s *Store) UseRefresh(ctx context.Context, hash string, ttl time.Duration) (RefreshUse, *Refresh, string, error) {
	res, err := useRefresh.Run(ctx, s.rdb, []string{s.refreshKey(hash), s.usedKey(hash)}, ttl.Milliseconds()).Slice()
	if err != nil {
		return RefreshUnknown, nil, "", storageErr(err)
	}
	kind, _ := res[0].(int64)
	val, _ := res[1].(string)
	switch RefreshUse(kind) {
	case RefreshFresh:
		var r Refresh
		if err := json.Unmarshal([]byte(val), &r); err != nil {
			return RefreshUnknown, nil, "", err
		}
		return RefreshFresh, &r, r.GrantID, nil
	case RefreshReused:
		return RefreshReused, nil, val, nil
	}
	return RefreshUnknown, nil, "", nil
}

func (s *Store) putJSON(ctx context.Context, key string, v any, ttl time.Duration) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = time.Second
	}
	return storageErr(s.rdb.Set(ctx, key, raw, ttl).Err())
}

func (s *Store) getJSON(ctx context.Context, key string, v any) (bool, error) {
	raw, err := s.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, storageErr(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, err
	}
	return true, nil
}

// storageErr is a Redis failure in the domain's terms: 503 unavailable,
// retry later. A context ending passes through.
func storageErr(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable", RetryAfter: 5 * time.Second,
		Retryable: true, Err: err}
}
