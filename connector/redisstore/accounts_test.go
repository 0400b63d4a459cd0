package redisstore

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func TestAccountCacheHitsThenExpires(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	if acct, ok, err := s.Accounts.Cached(ctx, "o"); err != nil || ok || acct != nil {
		t.Fatalf("empty cache = %v, %v, %v; want nil, false, nil", acct, ok, err)
	}
	yes := true
	want := &connector.Account{Valid: true, UserID: "u1", SubscriptionType: "pro", CreditsRemaining: 42, MaxImageSize: 10 << 20, CanCompress: &yes}
	if err := s.Accounts.Cache(ctx, "o", want, time.Minute); err != nil {
		t.Fatalf("Cache: %v", err)
	}
	got, ok, err := s.Accounts.Cached(ctx, "o")
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("Cached = %+v, %v, %v; want %+v, true, nil", got, ok, err, want)
	}
	if _, ok, _ := s.Accounts.Cached(ctx, "other"); ok {
		t.Fatal("another owner hit the cache, want a miss")
	}
	if r.Mini == nil {
		t.Skip("expiry is checked on miniredis only (FastForward)")
	}
	r.Mini.FastForward(time.Minute + time.Second)
	if _, ok, err := s.Accounts.Cached(ctx, "o"); ok || err != nil {
		t.Fatalf("after the TTL: hit %v, err %v; want a miss", ok, err)
	}
}

func TestCacheAccountWithoutTTLStoresNothing(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	if err := s.Accounts.Cache(ctx, "o", &connector.Account{Valid: true}, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Accounts.Cached(ctx, "o"); ok {
		t.Fatal("ttl 0 was cached (forever), want nothing stored")
	}
}

func TestConfirmedKeyIsRememberedForItsGraceOnly(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	if _, ok, err := s.Accounts.KeyConfirmedAt(ctx, "o"); ok || err != nil {
		t.Fatalf("before any confirmation: ok %v, err %v; want false, nil", ok, err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.Accounts.ConfirmKey(ctx, "o", at, time.Hour); err != nil {
		t.Fatalf("ConfirmKey: %v", err)
	}
	got, ok, err := s.Accounts.KeyConfirmedAt(ctx, "o")
	if err != nil || !ok || !got.Equal(at) {
		t.Fatalf("KeyConfirmedAt = %v, %v, %v; want %v, true, nil", got, ok, err, at)
	}
	if _, ok, _ := s.Accounts.KeyConfirmedAt(ctx, "other"); ok {
		t.Fatal("another owner reads as confirmed")
	}
	if err := s.Accounts.ConfirmKey(ctx, "nograce", at, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Accounts.KeyConfirmedAt(ctx, "nograce"); ok {
		t.Fatal("a grace of 0 stored a record, want nothing (it would never expire)")
	}
	if r.Mini == nil {
		t.Skip("expiry is checked on miniredis only (FastForward)")
	}
	r.Mini.FastForward(time.Hour + time.Second)
	if _, ok, err := s.Accounts.KeyConfirmedAt(ctx, "o"); ok || err != nil {
		t.Fatalf("after the grace: ok %v, err %v; want the record forgotten", ok, err)
	}
}
