package redisstore

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func createHook(t *testing.T, s *Store, id, owner string, created time.Time) *connector.Hook {
	t.Helper()
	h := &connector.Hook{ID: id, TargetURL: "https://hooks.example/" + id, Event: connector.EventJobFinished, CreatedAt: created, Owner: owner}
	if err := s.Hooks.Create(context.Background(), h); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
	return h
}

func TestHookRoundTripsWithOwner(t *testing.T) {
	s, r := newStore(t, Options{})
	want := createHook(t, s, "h1", "me", time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC))
	got, err := s.Hooks.Get(context.Background(), "h1")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Get = %+v, %v; want %+v, nil", got, err, want)
	}
	if ttl := r.Client.PTTL(context.Background(), s.conn.keys.hook("h1")).Val(); ttl != -1 {
		t.Fatalf("hook TTL = %v, want none (-1)", ttl)
	}
	_, err = s.Hooks.Get(context.Background(), "nope")
	wantCode(t, err, connector.ENOTFOUND)
}

func TestListHooksOldestFirstIncludingDisabledAndOnlyTheOwners(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	createHook(t, s, "h-late", "me", base.Add(2*time.Hour))
	createHook(t, s, "h-early", "me", base)
	createHook(t, s, "h-theirs", "them", base.Add(time.Hour))
	if err := s.Hooks.Disable(ctx, "h-early"); err != nil {
		t.Fatalf("Disable: %v", err)
	}
	hooks, err := s.Hooks.List(ctx, "me")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var got []string
	for _, h := range hooks {
		got = append(got, h.ID)
	}
	if want := []string{"h-early", "h-late"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List(me) = %v, want %v", got, want)
	}
	if !hooks[0].Disabled || hooks[1].Disabled {
		t.Fatalf("Disabled flags = %v, %v; want true, false", hooks[0].Disabled, hooks[1].Disabled)
	}
	if none, _ := s.Hooks.List(ctx, "nobody"); none == nil || len(none) != 0 {
		t.Fatalf("List(nobody) = %#v, want an empty, non-nil slice", none)
	}
}

func TestDeleteHookOnlyByItsOwner(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	createHook(t, s, "h1", "me", time.Now())
	wantCode(t, s.Hooks.Delete(ctx, "them", "h1"), connector.ENOTFOUND)
	if _, err := s.Hooks.Get(ctx, "h1"); err != nil {
		t.Fatalf("hook gone after another owner's delete: %v", err)
	}
	if err := s.Hooks.Delete(ctx, "me", "h1"); err != nil {
		t.Fatalf("Delete by its owner: %v", err)
	}
	if _, err := s.Hooks.Get(ctx, "h1"); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("Get after delete = %v, want not_found", err)
	}
	if hooks, _ := s.Hooks.List(ctx, "me"); len(hooks) != 0 {
		t.Fatalf("List after delete = %d hooks, want 0", len(hooks))
	}
	wantCode(t, s.Hooks.Delete(ctx, "me", "h1"), connector.ENOTFOUND)
}

func TestDisableUnknownHookIsNotFound(t *testing.T) {
	s, _ := newStore(t, Options{})
	wantCode(t, s.Hooks.Disable(context.Background(), "nope"), connector.ENOTFOUND)
}
