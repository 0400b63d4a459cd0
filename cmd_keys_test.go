package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
)

// TestKeysReadTheKeyFromStdinOrTheEnvironmentNeverArgv: a key on the
// command line shows in ps, so topup and show refuse it there.
func TestKeysReadTheKeyFromStdinOrTheEnvironmentNeverArgv(t *testing.T) {
	clearEnv(t)
	t.Setenv(keyEnv, "")
	mini := miniredis.RunT(t) // the command writes the upstream's default prefix: its own server
	url := "redis://" + mini.Addr()
	rdb := redis.NewClient(&redis.Options{Addr: mini.Addr()})
	defer rdb.Close()
	ledger := refupstream.NewLedger(rdb, refupstream.DefaultPrefix, nil)
	ctx := context.Background()
	key, _, err := ledger.CreateAccount(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	withStdin := func(s string) { stdin = strings.NewReader(s); t.Cleanup(func() { stdin = os.Stdin }) }
	paid := func() int64 {
		a, err := ledger.Lookup(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return a.Paid
	}

	withStdin(key + "\n")
	if err := runKeys(ctx, []string{"topup", "7", "--redis", url}); err != nil || paid() != 7 {
		t.Fatalf("topup with the key on stdin: %v, paid %d; want 7", err, paid())
	}
	withStdin("")
	t.Setenv(keyEnv, key)
	if err := runKeys(ctx, []string{"topup", "--redis", url, "3"}); err != nil || paid() != 10 {
		t.Fatalf("topup with the key in %s: %v, paid %d; want 10", keyEnv, err, paid())
	}
	if err := runKeys(ctx, []string{"show", "--redis", url}); err != nil {
		t.Fatalf("show: %v", err)
	}

	t.Setenv(keyEnv, "")
	for _, args := range [][]string{{"topup", key, "5", "--redis", url}, {"show", key, "--redis", url}} {
		err := runKeys(ctx, args)
		if err == nil || !strings.Contains(err.Error(), "no longer takes the key") || strings.Contains(err.Error(), key) {
			t.Errorf("%s with the key as an argument: %v; want a refusal that does not echo the key", args[0], err)
		}
	}
	if paid() != 10 {
		t.Errorf("paid = %d after refused top-ups, want 10", paid())
	}
	withStdin("")
	if err := runKeys(ctx, []string{"show", "--redis", url}); err == nil || !strings.Contains(err.Error(), keyEnv) {
		t.Errorf("show without a key: %v; want it to name %s", err, keyEnv)
	}
}
