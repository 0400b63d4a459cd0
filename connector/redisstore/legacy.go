package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Versions before the Redis Cluster hash tags wrote keys without braces
// (job:<id>, blob:in:<id>, jobs:<owner>, idem:<owner>:<key>, hook:<id>,
// hooks:<owner>). They only ever ran on a single Redis, so after an upgrade
// the store adopts such a record the first time it misses the new key: a
// RENAMENX to the tagged name, which keeps the TTL and is a no-op when the
// new key exists. Jobs queued or running at the upgrade, their inputs and
// results, Idempotency-Keys and hooks therefore carry on; a miss costs one
// extra round trip, a hit nothing. Owner indexes are merged once per owner
// and process. On a cluster client none of this runs: no old keys can exist
// there. The account cache is not adopted: a miss only re-checks the key.
//
// A rolling upgrade works: old processes publish done:<id>, which the wait
// hub also understands. A record that an old process writes after a new one
// adopted its key is not seen by the new one; stop the old writers first to
// avoid that window (docs/operations.md, "Upgrading").
type legacyKeys struct {
	merged sync.Map // index key -> struct{}: owner indexes already merged
}

func (s *base) legacyKey(kind, id string) string { return s.prefix + kind + ":" + id }

func (s *base) legacyBlobKey(key string) string { return s.prefix + "blob:" + key }

// adopt moves oldKey to newKey unless newKey exists, and reports whether
// the caller should read newKey again (it moved, or another process moved it).
func (s *base) adopt(ctx context.Context, oldKey, newKey string) (bool, error) {
	if s.legacy == nil {
		return false, nil
	}
	moved, err := s.bulk.RenameNX(ctx, oldKey, newKey).Result()
	if err != nil {
		if isNoSuchKey(err) {
			return false, nil
		}
		return false, storageErr(err)
	}
	return moved, nil
}

// adoptMany is adopt for several keys in one round trip; it reports whether
// any moved.
func (s *base) adoptMany(ctx context.Context, oldKeys, newKeys []string) (bool, error) {
	if s.legacy == nil || len(oldKeys) == 0 {
		return false, nil
	}
	cmds := make([]*redis.BoolCmd, len(oldKeys))
	_, err := s.bulk.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range oldKeys {
			cmds[i] = p.RenameNX(ctx, oldKeys[i], newKeys[i])
		}
		return nil
	})
	movedAny := false
	for _, c := range cmds {
		moved, cerr := c.Result()
		if cerr != nil && !isNoSuchKey(cerr) {
			return false, storageErr(cerr)
		}
		movedAny = movedAny || moved
	}
	if err != nil && !isNoSuchKey(err) {
		return false, storageErr(err)
	}
	return movedAny, nil
}

// orAdopted runs op, and once more when it ended in ENOTFOUND and an
// untagged record was adopted meanwhile.
func (s *base) orAdopted(ctx context.Context, oldKey, newKey string, op func() error) error {
	err := op()
	if s.legacy == nil || connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		return err
	}
	moved, aerr := s.adopt(ctx, oldKey, newKey)
	if aerr != nil {
		return aerr
	}
	if moved {
		return op()
	}
	return err
}

// mergeIndex folds the untagged index oldKey into newKey once per process:
// union (ZUNIONSTORE for job listings, SUNIONSTORE for hook sets) and delete,
// in one MULTI (one node: untagged keys only exist on a single Redis).
func (s *base) mergeIndex(ctx context.Context, oldKey, newKey string, sorted bool) error {
	if s.legacy == nil {
		return nil
	}
	if _, done := s.legacy.merged.Load(newKey); done {
		return nil
	}
	n, err := s.bulk.Exists(ctx, oldKey).Result()
	if err != nil {
		return storageErr(err)
	}
	if n > 0 {
		_, err = s.bulk.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if sorted {
				p.ZUnionStore(ctx, newKey, &redis.ZStore{Keys: []string{newKey, oldKey}})
				p.Expire(ctx, newKey, s.jobTTL)
			} else {
				p.SUnionStore(ctx, newKey, newKey, oldKey)
			}
			p.Del(ctx, oldKey)
			return nil
		})
		if err != nil {
			return storageErr(err)
		}
	}
	s.legacy.merged.Store(newKey, struct{}{})
	return nil
}

// isNoSuchKey is RENAME's answer when the source key does not exist.
func isNoSuchKey(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(rerr.Error(), "no such key")
}
