package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// storedHook is a hook as kept in Redis, with the owner connector.Hook hides
// from JSON.
type storedHook struct {
	Hook  *connector.Hook `json:"hook"`
	Owner string          `json:"owner"`
}

func encodeHook(h *connector.Hook) ([]byte, error) {
	return json.Marshal(storedHook{Hook: h, Owner: h.Owner})
}

func decodeHook(data []byte) (*connector.Hook, error) {
	var sh storedHook
	if err := json.Unmarshal(data, &sh); err != nil {
		return nil, internalErr(fmt.Errorf("decode hook: %w", err))
	}
	if sh.Hook == nil {
		return nil, internalErr(errors.New("decode hook: no hook in record"))
	}
	sh.Hook.Owner = sh.Owner
	return sh.Hook, nil
}

// CreateHook stores a new subscription (no expiry) and adds it to its owner's
// set. An id that already exists is an internal error: ids are generated.
func (s *Store) CreateHook(ctx context.Context, h *connector.Hook) error {
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
	ok, err := s.rdb.SetNX(ctx, s.hookKey(h.ID), data, 0).Result()
	if err != nil {
		return storageErr(err)
	}
	if !ok {
		return internalErr(fmt.Errorf("create hook: id %s already exists", h.ID))
	}
	return storageErr(s.rdb.SAdd(ctx, s.hookIndexKey(h.Owner), h.ID).Err())
}

// GetHook returns the hook, or ENOTFOUND. It does not check the owner: the
// worker reads hooks by id; the HTTP layer compares Owner itself.
func (s *Store) GetHook(ctx context.Context, id string) (h *connector.Hook, err error) {
	err = s.orAdopted(ctx, s.legacyKey("hook", id), s.hookKey(id), func() error {
		h, err = s.getHook(ctx, id)
		return err
	})
	return h, err
}

func (s *Store) getHook(ctx context.Context, id string) (*connector.Hook, error) {
	data, err := s.rdb.Get(ctx, s.hookKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, notFound("hook", id)
	}
	if err != nil {
		return nil, storageErr(err)
	}
	return decodeHook(data)
}

// ListHooks returns all of owner's hooks, disabled ones included, oldest
// first (by CreatedAt, then id).
func (s *Store) ListHooks(ctx context.Context, owner string) ([]*connector.Hook, error) {
	idx := s.hookIndexKey(owner)
	if err := s.mergeIndex(ctx, s.legacyKey("hooks", owner), idx, false); err != nil {
		return nil, err
	}
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
			cmds[i] = p.Get(ctx, s.hookKey(id))
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
			// Left behind by a DeleteHook that failed halfway, or written
			// by an older version (GetHook adopts it).
			h, err := s.GetHook(ctx, ids[i])
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

// DeleteHook removes owner's hook; ENOTFOUND when it is missing or belongs to
// another owner, so that other keys' hooks stay invisible.
func (s *Store) DeleteHook(ctx context.Context, owner, id string) error {
	h, err := s.GetHook(ctx, id)
	if err != nil {
		return err
	}
	if h.Owner != owner {
		return notFound("hook", id)
	}
	if err := s.rdb.Del(ctx, s.hookKey(id)).Err(); err != nil {
		return storageErr(err)
	}
	return storageErr(s.rdb.SRem(ctx, s.hookIndexKey(owner), id).Err())
}

// DisableHook marks the hook disabled (its target answered 410 Gone); it stays
// listed so the owner can see why deliveries stopped. ENOTFOUND if missing.
func (s *Store) DisableHook(ctx context.Context, id string) error {
	return s.orAdopted(ctx, s.legacyKey("hook", id), s.hookKey(id), func() error {
		return s.disableHook(ctx, id)
	})
}

func (s *Store) disableHook(ctx context.Context, id string) error {
	key := s.hookKey(id)
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
		if h.Disabled {
			return nil
		}
		h.Disabled = true
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
