package main

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector/keyring"
)

// TestKeysSetTurnsWritesTheKeysWeightAndLimitUnderItsHash: the fields fair
// dispatch reads (worker/dispatch.go), named by the key's hash, never the key.
func TestKeysSetTurnsWritesTheKeysWeightAndLimitUnderItsHash(t *testing.T) {
	clearEnv(t)
	const secret, key = "turns-test-secret-0123456789", "turns-test-key-0123456789"
	t.Setenv(keyEnv, key)
	mini := miniredis.RunT(t)
	url := "redis://" + mini.Addr()
	ctx := context.Background()
	base := []string{"set-turns", "--redis", url, "--secret", secret, "--queue", "q"}
	if err := runKeys(ctx, append(base, "--weight", "2.5", "--limit", "4")); err != nil {
		t.Fatal(err)
	}
	if err := runKeys(ctx, append(base, "--limit", "-1")); err != nil { // the weight stays
		t.Fatal(err)
	}
	kr, err := keyring.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	owner := kr.KeyHash(key)
	rdb := redis.NewClient(&redis.Options{Addr: mini.Addr()})
	defer rdb.Close()
	got, err := rdb.HGetAll(ctx, "imgflow:fair:{q}:state").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"w:" + owner: "2.5", "c:" + owner: "-1"}; len(got) != 2 || got["w:"+owner] != want["w:"+owner] || got["c:"+owner] != want["c:"+owner] {
		t.Fatalf("state hash %v, want %v", got, want)
	}
	for _, bad := range [][]string{
		append(base, key, "--weight", "2"), // the key on the command line
		append(base, "--weight", "0"),
		base, // nothing to set
	} {
		if err := runKeys(ctx, bad); err == nil {
			t.Errorf("keys %v: no error", bad)
		}
	}
}
