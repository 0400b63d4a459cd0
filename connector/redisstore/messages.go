package redisstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

// msg:{id} holds a message (connector.Message, JSON), TTL JobTTL; its
// deliveries go to deliveries:{id} as a job's do.

// dlvidx:{owner} is the owner's deliveries across jobs and messages: a
// sorted set scored by first attempt (unix ms), members
// "j|<job id>|<delivery id>|<hook id>" or "m|<message id>|...", trimmed to
// JobTTL on every add and expiring JobTTL after the last.

// cbsecret:{owner} holds the version of the owner's callback secret: version,
// previous_until (unix ms). No TTL.

// PutMessage stores m for JobTTL.
func (s *Hooks) PutMessage(ctx context.Context, m *connector.Message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return internalErr(fmt.Errorf("encode message: %w", err))
	}
	return storageErr(s.rdb.Set(ctx, s.keys.msg(m.ID), data, s.jobTTL).Err())
}

// GetMessage returns the message, or ENOTFOUND.
func (s *Hooks) GetMessage(ctx context.Context, id string) (*connector.Message, error) {
	data, err := s.rdb.Get(ctx, s.keys.msg(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, notFound("message", id)
	}
	if err != nil {
		return nil, storageErr(err)
	}
	var m connector.Message
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, internalErr(fmt.Errorf("decode message: %w", err))
	}
	return &m, nil
}

// RecordMessageAttempt appends a to the message's delivery log, which
// expires with the message, and indexes the delivery for its owner.
func (s *Hooks) RecordMessageAttempt(ctx context.Context, m *connector.Message, a *connector.DeliveryAttempt) error {
	return s.recordAttempt(ctx, "m", m.ID, s.keys.msg(m.ID), m.Owner, a)
}

// MessageDeliveryAttempts returns the message's attempts, oldest first.
func (s *Hooks) MessageDeliveryAttempts(ctx context.Context, msgID string) ([]*connector.DeliveryAttempt, error) {
	return s.DeliveryAttempts(ctx, msgID)
}

// recordAttempt appends a to subject's log (living as long as the record
// at recordKey) and adds the delivery to owner's index, in one round trip.
func (s *Hooks) recordAttempt(ctx context.Context, kind, subject, recordKey, owner string, a *connector.DeliveryAttempt) error {
	data, err := json.Marshal(a)
	if err != nil {
		return internalErr(fmt.Errorf("encode delivery attempt: %w", err))
	}
	at := a.At
	if at.IsZero() {
		at = s.now()
	}
	idx := s.keys.deliveryIndex(owner)
	member := kind + "|" + subject + "|" + a.DeliveryID + "|" + a.HookID
	_, err = s.pipelinedScripts(ctx, func(p redis.Pipeliner) {
		recordAttemptScript.EvalSha(ctx, p, []string{recordKey, s.keys.deliveries(subject)}, data, MaxDeliveryAttempts)
		if owner != "" {
			p.ZAddNX(ctx, idx, redis.Z{Score: float64(at.UnixMilli()), Member: member})
			p.ZRemRangeByScore(ctx, idx, "-inf", "("+strconv.FormatInt(s.now().Add(-s.jobTTL).UnixMilli(), 10))
			p.PExpire(ctx, idx, s.jobTTL)
		}
	})
	return storageErr(err)
}

// listBatch is how many index entries ListDeliveries reads at a time, and
// maxScanned how many one call reads at most before it answers with what
// it found and a cursor (a filter that matches little must not read an
// owner's whole week).
const (
	listBatch  = 200
	maxScanned = 2000
)

// indexEntry is one member of an owner's delivery index.
type indexEntry struct {
	score                             int64
	member                            string
	kind, subject, deliveryID, hookID string
}

func parseIndexEntry(z redis.Z) (indexEntry, bool) {
	m, _ := z.Member.(string)
	parts := strings.SplitN(m, "|", 4)
	if len(parts) != 4 {
		return indexEntry{}, false
	}
	return indexEntry{score: int64(z.Score), member: m, kind: parts[0], subject: parts[1], deliveryID: parts[2], hookID: parts[3]}, true
}

// ListDeliveries pages through owner's deliveries by first attempt,
// newest first, each with its attempts and status.
func (s *Hooks) ListDeliveries(ctx context.Context, owner string, f connector.DeliveryFilter) (*connector.DeliveryPage, error) {
	if f.Limit <= 0 || f.Limit > 100 {
		f.Limit = 100
	}
	maxScore, afterMember, err := decodeDeliveryCursor(f.Cursor)
	if err != nil {
		return nil, err
	}
	minScore := "-inf"
	if !f.Since.IsZero() {
		minScore = strconv.FormatInt(f.Since.UnixMilli(), 10)
	}
	page := &connector.DeliveryPage{Deliveries: []*connector.DeliveryRecord{}}
	var last *indexEntry
	scanned := 0
	for offset := int64(0); ; offset += listBatch {
		zs, err := s.rdb.ZRevRangeByScoreWithScores(ctx, s.keys.deliveryIndex(owner), &redis.ZRangeBy{
			Max: maxScore, Min: minScore, Offset: offset, Count: listBatch}).Result()
		if err != nil {
			return nil, storageErr(err)
		}
		var entries []indexEntry
		for _, z := range zs {
			e, ok := parseIndexEntry(z)
			if !ok || (afterMember != "" && strconv.FormatInt(e.score, 10) == maxScore && e.member >= afterMember) {
				continue // not after the cursor
			}
			if f.HookID != "" && e.hookID != f.HookID {
				continue
			}
			entries = append(entries, e)
		}
		records, err := s.indexedRecords(ctx, entries)
		if err != nil {
			return nil, err
		}
		for i := range entries {
			scanned++
			r := records[i]
			if r == nil || (f.Status != "" && r.Status != f.Status) {
				if scanned >= maxScanned {
					last = &entries[i]
					break
				}
				continue
			}
			page.Deliveries = append(page.Deliveries, r)
			if len(page.Deliveries) == f.Limit || scanned >= maxScanned {
				last = &entries[i]
				break
			}
		}
		if last != nil || len(zs) < listBatch {
			break
		}
	}
	if last != nil {
		page.NextCursor = encodeDeliveryCursor(last.score, last.member)
	}
	return page, nil
}

// indexedRecords reads the delivery record of each entry (nil where its
// log is gone), each subject's log once, in one round trip.
func (s *Hooks) indexedRecords(ctx context.Context, entries []indexEntry) ([]*connector.DeliveryRecord, error) {
	logs := map[string]*redis.StringSliceCmd{}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			if logs[e.subject] == nil {
				logs[e.subject] = p.LRange(ctx, s.keys.deliveries(e.subject), 0, -1)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storageErr(err)
	}
	grouped := map[string][]*connector.DeliveryRecord{}
	out := make([]*connector.DeliveryRecord, len(entries))
	for i, e := range entries {
		recs, ok := grouped[e.subject]
		if !ok {
			attempts, err := decodeAttemptList(logs[e.subject].Val())
			if err != nil {
				return nil, err
			}
			recs = connector.GroupDeliveries(attempts)
			grouped[e.subject] = recs
		}
		for _, r := range recs {
			if r.ID == e.deliveryID {
				if e.kind == "j" {
					r.JobID = e.subject
				} else {
					r.MessageID = e.subject
				}
				out[i] = r
			}
		}
	}
	return out, nil
}

func encodeDeliveryCursor(score int64, member string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(score, 10) + "\n" + member))
}

// decodeDeliveryCursor gives the page's highest score ("+inf" without a
// cursor) and the member it follows.
func decodeDeliveryCursor(c string) (maxScore, afterMember string, err error) {
	if c == "" {
		return "+inf", "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	score, member, ok := strings.Cut(string(raw), "\n")
	if _, perr := strconv.ParseInt(score, 10, 64); err != nil || !ok || perr != nil {
		return "", "", &connector.Error{Code: connector.EINVALID, Message: "cursor is not one this API gave",
			Details: []connector.FieldError{{Field: "cursor", Message: "use next_cursor of the previous page"}}}
	}
	return score, member, nil
}

// CallbackSecretVersion is the version of owner's callback secret.
func (s *Hooks) CallbackSecretVersion(ctx context.Context, owner string) (connector.SecretVersion, error) {
	r, err := s.rdb.HMGet(ctx, s.keys.cbSecret(owner), "version", "previous_until").Result()
	if err != nil {
		return connector.SecretVersion{}, storageErr(err)
	}
	return secretVersion(r), nil
}

func secretVersion(r []any) connector.SecretVersion {
	var v connector.SecretVersion
	if s, ok := r[0].(string); ok {
		v.Version, _ = strconv.Atoi(s)
	} else if n, ok := r[0].(int64); ok {
		v.Version = int(n)
	}
	var ms int64
	if s, ok := r[1].(string); ok {
		ms, _ = strconv.ParseInt(s, 10, 64)
	} else if n, ok := r[1].(int64); ok {
		ms = n
	}
	if ms > 0 {
		v.PreviousUntil = time.UnixMilli(ms).UTC()
	}
	return v
}

var rotateCallbackScript = redis.NewScript(`
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'previous_until', ARGV[1])
return {v, ARGV[1]}
`)

// RotateCallbackSecret raises owner's callback secret version; the
// previous one keeps signing until now+overlap.
func (s *Hooks) RotateCallbackSecret(ctx context.Context, owner string, now time.Time, overlap time.Duration) (connector.SecretVersion, error) {
	r, err := rotateCallbackScript.Run(ctx, s.rdb, []string{s.keys.cbSecret(owner)}, now.Add(overlap).UnixMilli()).Slice()
	if err != nil {
		return connector.SecretVersion{}, storageErr(err)
	}
	return secretVersion(r), nil
}
