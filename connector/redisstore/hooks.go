package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Hooks keeps what delivering events needs: the REST hook subscriptions,
// the endpoints they and callback URLs are sent to (failures, pauses,
// rates), the events that are not a job's (messages), every delivery's
// log, and each owner's callback secret version. Files: hooks.go,
// endpoints.go, messages.go, deliveries.go.
type Hooks struct{ *conn }

// storedHook is a hook as kept in Redis, with the owner connector.Hook hides
// from JSON.
type storedHook struct {
	Hook                *connector.Hook `json:"hook"`
	Owner               string          `json:"owner"`
	SecretVersion       int             `json:"secret_version,omitempty"`
	PreviousSecretUntil *time.Time      `json:"previous_secret_until,omitempty"`
}

func encodeHook(h *connector.Hook) ([]byte, error) {
	h.Status = connector.HookEnabled
	if h.Disabled {
		h.Status = connector.HookDisabled
	}
	return json.Marshal(storedHook{Hook: h, Owner: h.Owner, SecretVersion: h.SecretVersion, PreviousSecretUntil: h.PreviousSecretUntil})
}

func decodeHook(data []byte) (*connector.Hook, error) {
	var sh storedHook
	if err := json.Unmarshal(data, &sh); err != nil {
		return nil, internalErr(fmt.Errorf("decode hook: %w", err))
	}
	if sh.Hook == nil {
		return nil, internalErr(errors.New("decode hook: no hook in record"))
	}
	sh.Hook.Owner, sh.Hook.SecretVersion, sh.Hook.PreviousSecretUntil = sh.Owner, sh.SecretVersion, sh.PreviousSecretUntil
	sh.Hook.Status = connector.HookEnabled
	if sh.Hook.Disabled {
		sh.Hook.Status = connector.HookDisabled
	}
	return sh.Hook, nil
}

// Create stores a new subscription (no expiry) and adds it to its owner's
// set. An id that already exists is an internal error: ids are generated.
func (s *Hooks) Create(ctx context.Context, h *connector.Hook) error {
	if h.ID == "" {
		return internalErr(errors.New("create hook: empty id"))
	}
	if h.CreatedAt.IsZero() {
		h.CreatedAt = s.now()
	}
	data, err := encodeHook(h)
	if err != nil {
		return internalErr(err)
	}
	ok, err := s.rdb.SetNX(ctx, s.keys.hook(h.ID), data, 0).Result()
	if err != nil {
		return storageErr(err)
	}
	if !ok {
		return internalErr(fmt.Errorf("create hook: id %s already exists", h.ID))
	}
	return storageErr(s.rdb.SAdd(ctx, s.keys.hookIndex(h.Owner), h.ID).Err())
}

// addHookScript adds hook id ARGV[1] to its owner's set (KEYS[1]) unless
// the set holds ARGV[2] hooks already (ARGV[2] <= 0: no cap); 1 when added.
var addHookScript = redis.NewScript(`
local max = tonumber(ARGV[2])
if max > 0 and redis.call('SCARD', KEYS[1]) >= max then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
return 1
`)

// CreateLimited is Create refusing a hook beyond max for its owner
// with ETOOMANYHOOKS (max <= 0: no cap). The owner's set is counted and
// added to in one script, so concurrent creations cannot pass the cap; the
// record follows (another slot on a cluster), and the set entry is taken
// back if it cannot be written.
func (s *Hooks) CreateLimited(ctx context.Context, h *connector.Hook, max int) error {
	if h.ID == "" {
		return internalErr(errors.New("create hook: empty id"))
	}
	if max > 0 {
		// Entries left by a half-failed delete would count: List
		// drops them.
		if _, err := s.List(ctx, h.Owner); err != nil {
			return err
		}
	}
	added, err := addHookScript.Run(ctx, s.rdb, []string{s.keys.hookIndex(h.Owner)}, h.ID, max).Int()
	if err != nil {
		return storageErr(err)
	}
	if added == 0 {
		return &connector.Error{Code: connector.ETOOMANYHOOKS,
			Message: fmt.Sprintf("this key has %d hooks, the most it may have: delete one first", max)}
	}
	if h.CreatedAt.IsZero() {
		h.CreatedAt = s.now()
	}
	data, err := encodeHook(h)
	if err == nil {
		err = s.rdb.SetNX(ctx, s.keys.hook(h.ID), data, 0).Err()
	}
	if err != nil {
		s.rdb.SRem(context.WithoutCancel(ctx), s.keys.hookIndex(h.Owner), h.ID)
		return storageErr(err)
	}
	return nil
}

// Get returns the hook, or ENOTFOUND. It does not check the owner: the
// worker reads hooks by id; the HTTP layer compares Owner itself.
func (s *Hooks) Get(ctx context.Context, id string) (*connector.Hook, error) {
	return s.getHook(ctx, id)
}

func (s *Hooks) getHook(ctx context.Context, id string) (*connector.Hook, error) {
	data, err := s.rdb.Get(ctx, s.keys.hook(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, notFound("hook", id)
	}
	if err != nil {
		return nil, storageErr(err)
	}
	return decodeHook(data)
}

// List returns all of owner's hooks, disabled ones included, oldest
// first (by CreatedAt, then id).
func (s *Hooks) List(ctx context.Context, owner string) ([]*connector.Hook, error) {
	idx := s.keys.hookIndex(owner)
	ids, err := s.rdb.SMembers(ctx, idx).Result()
	if err != nil {
		return nil, storageErr(err)
	}
	if len(ids) == 0 {
		return []*connector.Hook{}, nil
	}
	cmds := make([]*redis.StringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.Get(ctx, s.keys.hook(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storageErr(err)
	}
	hooks := make([]*connector.Hook, 0, len(ids))
	var stale []any
	for i, cmd := range cmds {
		data, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			// Left behind by a Delete that failed halfway, or the
			// record went meanwhile: Get tells.
			h, err := s.Get(ctx, ids[i])
			if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
				stale = append(stale, ids[i])
				continue
			}
			if err != nil {
				return nil, err
			}
			hooks = append(hooks, h)
			continue
		}
		if err != nil {
			return nil, storageErr(err)
		}
		h, err := decodeHook(data)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, h)
	}
	if len(stale) > 0 {
		if err := s.rdb.SRem(ctx, idx, stale...).Err(); err != nil {
			return nil, storageErr(err)
		}
	}
	slices.SortFunc(hooks, func(a, b *connector.Hook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return hooks, nil
}

// Delete removes owner's hook; ENOTFOUND when it is missing or belongs to
// another owner, so that other keys' hooks stay invisible.
func (s *Hooks) Delete(ctx context.Context, owner, id string) error {
	h, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if h.Owner != owner {
		return notFound("hook", id)
	}
	if err := s.rdb.Del(ctx, s.keys.hook(id)).Err(); err != nil {
		return storageErr(err)
	}
	return storageErr(s.rdb.SRem(ctx, s.keys.hookIndex(owner), id).Err())
}

// Disable marks the hook disabled because its target answered 410
// Gone; it stays listed so the owner can see why deliveries stopped.
// ENOTFOUND if missing.
func (s *Hooks) Disable(ctx context.Context, id string) error {
	_, err := s.DisableFor(ctx, id, connector.DisabledGone, s.now())
	return err
}

// DisableFor marks the hook disabled with reason; changed is false when
// it already was. ENOTFOUND if missing.
func (s *Hooks) DisableFor(ctx context.Context, id, reason string, at time.Time) (changed bool, err error) {
	err = s.updateHook(ctx, id, func(h *connector.Hook) bool {
		// Run again when the transaction is retried: only the last run
		// says whether this call disabled it.
		if changed = !h.Disabled; !changed {
			return false
		}
		at := at.UTC()
		h.Disabled, h.DisabledReason, h.DisabledAt = true, reason, &at
		return true
	})
	return changed, err
}

// Enable turns owner's disabled hook back on and forgets its
// endpoint's failures, so the next failure starts a new count.
func (s *Hooks) Enable(ctx context.Context, owner, id string) (*connector.Hook, error) {
	h, err := s.ownedHook(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	err = s.updateHook(ctx, id, func(h *connector.Hook) bool {
		if !h.Disabled {
			return false
		}
		h.Disabled, h.DisabledReason, h.DisabledAt = false, "", nil
		return true
	})
	if err != nil {
		return nil, err
	}
	if err := s.ResetEndpoint(ctx, connector.HookEndpointID(id)); err != nil {
		return nil, err
	}
	h.Disabled, h.DisabledReason, h.DisabledAt, h.Status = false, "", nil, connector.HookEnabled
	return h, nil
}

// RotateSecret raises owner's hook's secret version; the previous
// version keeps signing until now+overlap.
func (s *Hooks) RotateSecret(ctx context.Context, owner, id string, now time.Time, overlap time.Duration) (*connector.Hook, error) {
	if _, err := s.ownedHook(ctx, owner, id); err != nil {
		return nil, err
	}
	var out *connector.Hook
	err := s.updateHook(ctx, id, func(h *connector.Hook) bool {
		until := now.UTC().Add(overlap)
		h.SecretVersion++
		h.PreviousSecretUntil = &until
		out = h
		return true
	})
	return out, err
}

// ownedHook is owner's hook, or ENOTFOUND.
func (s *Hooks) ownedHook(ctx context.Context, owner, id string) (*connector.Hook, error) {
	h, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if h.Owner != owner {
		return nil, notFound("hook", id)
	}
	return h, nil
}

// updateHook applies change to the stored hook in one transaction; change
// returns false to leave it as it is.
func (s *Hooks) updateHook(ctx context.Context, id string, change func(*connector.Hook) bool) error {
	key := s.keys.hook(id)
	return s.watch(ctx, key, func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return notFound("hook", id)
		}
		if err != nil {
			return err
		}
		h, err := decodeHook(data)
		if err != nil {
			return err
		}
		if !change(h) {
			return nil
		}
		if data, err = encodeHook(h); err != nil {
			return internalErr(err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, key, data, redis.SetArgs{Mode: "XX"})
			return nil
		})
		if errors.Is(err, redis.Nil) {
			return notFound("hook", id)
		}
		return err
	})
}
