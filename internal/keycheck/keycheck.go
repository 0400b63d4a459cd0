// Package keycheck decides whether an API key may make work: the
// compression API's answer for the key (valid, credits left), cached per
// key in this process and in the shared store, and, while the compression
// API cannot be asked, a bounded fail-open for keys it confirmed lately.
// The HTTP API, the creation service and the MCP server share one Checker.
//
// Tests: go test ./server -run 'FailOpen|KeyGrace|Preflight' (the checker
// behind the routes).
package keycheck

import (
	"context"
	"log/slog"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Accounts keeps recent key checks briefly, per key hash, and remembers
// longer which keys the compression API confirmed: while it cannot be
// asked, only those keys are let in (redisstore.Accounts).
type Accounts interface {
	Cached(ctx context.Context, owner string) (*connector.Account, bool, error)
	Cache(ctx context.Context, owner string, acct *connector.Account, ttl time.Duration) error
	// ConfirmKey records that the compression API confirmed owner's key
	// at at; the record is kept for grace, then forgotten.
	ConfirmKey(ctx context.Context, owner string, at time.Time, grace time.Duration) error
	// KeyConfirmedAt is when the compression API last confirmed owner's
	// key, ok false when it never did (or the record was forgotten).
	KeyConfirmedAt(ctx context.Context, owner string) (at time.Time, ok bool, err error)
}

// Validator asks the compression API about a key (connector.Compressor).
type Validator interface {
	Validate(ctx context.Context, key string) (*connector.Account, error)
}

// Config is what a Checker needs; Accounts, Validator and Owner are
// required.
type Config struct {
	Accounts  Accounts
	Validator Validator
	// Owner is the stand-in for a key in records: its keyed hash.
	Owner func(key string) string
	// TTL is how long a key check is cached per key. Default 30s: long
	// enough to spare the compression API a call per job, short enough
	// that a top-up is seen quickly.
	TTL time.Duration
	// Grace bounds the fail-open: while the compression API cannot check
	// keys, a key it confirmed within Grace is served and any other gets
	// 503 upstream_unavailable. Default 24h (IMGFLOW_KEY_GRACE).
	Grace  time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// Checker checks keys (see the package comment).
type Checker struct {
	cfg  Config
	memo *memo
}

// New returns the Checker with defaults filled in.
func New(cfg Config) *Checker {
	if cfg.TTL <= 0 {
		cfg.TTL = 30 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 24 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Checker{cfg: cfg, memo: newMemo()}
}

// Owner is the stand-in for key in records.
func (k *Checker) Owner(key string) string { return k.cfg.Owner(key) }

// Check is the admission of new work: a bad key is EUNAUTHORIZED, a zero
// balance ENOCREDITS, from the cached answer (Account). If the compression
// API cannot be asked, withinGrace decides.
func (k *Checker) Check(ctx context.Context, key string) error {
	acct, err := k.lookup(ctx, key)
	if err != nil || acct == nil {
		return err
	}
	return accountError(acct)
}

// Known is Check for reads: a zero balance passes (reads, hooks and
// Idempotency-Key replays cost nothing).
func (k *Checker) Known(ctx context.Context, key string) error {
	if err := k.Check(ctx, key); err != nil && connector.ErrorCodeOf(err) != connector.ENOCREDITS {
		return err
	}
	return nil
}

// Account is the key's account as last checked (at most TTL old): this
// process's memo, the shared cache, else the compression API (remembered).
// An unknown key is EUNAUTHORIZED; while the compression API cannot be
// asked and nothing is cached, upstream_unavailable.
func (k *Checker) Account(ctx context.Context, key string) (*connector.Account, error) {
	acct, err := k.lookup(ctx, key)
	switch {
	case err != nil:
		return nil, err
	case acct == nil:
		return nil, UpstreamUnavailable(nil)
	case !acct.Valid:
		return nil, accountError(acct)
	}
	return acct, nil
}

// lookup is the key's account as last checked; nil, and no error, when the
// compression API cannot be asked and the key was confirmed within Grace.
func (k *Checker) lookup(ctx context.Context, key string) (*connector.Account, error) {
	owner := k.cfg.Owner(key)
	now := k.cfg.Now()
	if acct, ok := k.memo.get(owner, now); ok {
		return acct, nil
	}
	acct, ok, err := k.cfg.Accounts.Cached(ctx, owner)
	if err != nil {
		return nil, err
	}
	if ok {
		k.memo.put(owner, acct, now, min(memoTTL, k.cfg.TTL))
		return acct, nil
	}
	acct, err = k.cfg.Validator.Validate(ctx, key)
	switch connector.ErrorCodeOf(err) {
	case "":
	case connector.EUNAUTHORIZED:
		acct = &connector.Account{Valid: false}
	default:
		return nil, k.withinGrace(ctx, owner, err)
	}
	if err := k.remember(ctx, owner, acct); err != nil {
		return nil, err
	}
	return acct, nil
}

// Refresh asks the compression API for the key's live account and
// remembers it: this process's next checks see the live balance at once.
// An unknown key is EUNAUTHORIZED; an API that cannot be asked,
// upstream_unavailable.
func (k *Checker) Refresh(ctx context.Context, key string) (*connector.Account, error) {
	acct, err := k.cfg.Validator.Validate(ctx, key)
	switch connector.ErrorCodeOf(err) {
	case "":
	case connector.EUNAUTHORIZED:
		return nil, err
	default:
		return nil, UpstreamUnavailable(err)
	}
	if err := k.remember(ctx, k.cfg.Owner(key), acct); err != nil {
		LoggerOf(ctx, k.cfg.Logger).Warn("account not cached", "err", err)
	}
	return acct, nil
}

// NoteBalance records the balance a finished job reported for key (its
// result's credits_remaining) on the cached account, so that the next
// answer from the cache is not older than the key's own last job. Nothing
// is cached when no account is.
func (k *Checker) NoteBalance(ctx context.Context, key string, credits int64) {
	owner := k.cfg.Owner(key)
	acct, ok := k.memo.get(owner, k.cfg.Now())
	if !ok {
		var err error
		if acct, ok, err = k.cfg.Accounts.Cached(ctx, owner); err != nil || !ok {
			return
		}
	}
	if acct.CreditsRemaining == credits {
		return
	}
	noted := *acct
	noted.CreditsRemaining = credits
	if err := k.remember(ctx, owner, &noted); err != nil {
		LoggerOf(ctx, k.cfg.Logger).Warn("balance not cached", "err", err)
	}
}

// remember keeps a key check's answer: briefly in the shared cache and this
// process's memo, and, for a valid key, as the confirmation that
// withinGrace counts from.
func (k *Checker) remember(ctx context.Context, owner string, acct *connector.Account) error {
	if err := k.cfg.Accounts.Cache(ctx, owner, acct, k.cfg.TTL); err != nil {
		return err
	}
	if acct.Valid {
		if err := k.cfg.Accounts.ConfirmKey(ctx, owner, k.cfg.Now(), k.cfg.Grace); err != nil {
			return err
		}
	}
	k.memo.put(owner, acct, k.cfg.Now(), min(memoTTL, k.cfg.TTL))
	return nil
}

// retryAfter is the Retry-After of upstream_unavailable: outages of the
// compression API last longer than a Redis blip.
const retryAfter = 30 * time.Second

// withinGrace decides for a key the compression API cannot check now
// (cause): a key it confirmed within Grace passes, so flows run through an
// outage and the worker retries the upstream; any other key gets 503
// upstream_unavailable before anything is read or stored, so made-up keys
// cannot queue work, create hooks or read while the upstream is down.
func (k *Checker) withinGrace(ctx context.Context, owner string, cause error) error {
	at, ok, err := k.cfg.Accounts.KeyConfirmedAt(ctx, owner)
	if err != nil {
		return err
	}
	log := LoggerOf(ctx, k.cfg.Logger)
	code := connector.ErrorCodeOf(cause)
	if ok && k.cfg.Now().Sub(at) < k.cfg.Grace {
		log.Warn("preflight: key check unavailable; the key was confirmed lately, accepting", "code", code, "confirmed_at", at)
		return nil
	}
	log.Info("preflight: key check unavailable; the key was not confirmed lately, refusing", "code", code)
	return UpstreamUnavailable(cause)
}

// UpstreamUnavailable is the answer when the compression API cannot check
// a key: 503 with Retry-After.
func UpstreamUnavailable(cause error) error {
	return &connector.Error{
		Code:       connector.EUPSTREAMDOWN,
		Message:    "the compression API cannot check this key right now; retry later",
		RetryAfter: retryAfter,
		Retryable:  true,
		Err:        cause,
	}
}

// accountError is the error a key check's answer means for new work.
func accountError(acct *connector.Account) error {
	if !acct.Valid {
		return &connector.Error{Code: connector.EUNAUTHORIZED, Message: "Invalid API key", UpstreamStatus: 401}
	}
	if acct.CreditsRemaining <= 0 || (acct.CanCompress != nil && !*acct.CanCompress) {
		zero := acct.CreditsRemaining
		return &connector.Error{
			Code:             connector.ENOCREDITS,
			Message:          "Insufficient credits. Please purchase more credits to continue compression.",
			CreditsRemaining: &zero,
		}
	}
	return nil
}

// ctxLogKey carries a request's logger into the checks made for it, so
// their log lines keep the request id.
type ctxLogKey struct{}

// WithLogger returns ctx carrying log for the checks made under it.
func WithLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, ctxLogKey{}, log)
}

// LoggerOf is the logger ctx carries, else fallback.
func LoggerOf(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := ctx.Value(ctxLogKey{}).(*slog.Logger); ok {
		return l
	}
	return fallback
}
