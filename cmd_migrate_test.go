package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/system"
)

// imgflow migrate says where the layout stands and what it applied; run
// again, it has nothing to do.
func TestMigrateReportsAndAppliesTheSteps(t *testing.T) {
	clearEnv(t)
	mr := miniredis.RunT(t)
	url := "redis://" + mr.Addr()
	out := captureStdout(t, func() {
		if err := runMigrate(context.Background(), []string{"--redis", url, "--dry-run"}); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(out, "current 0, target 1") || !strings.Contains(out, "due") || mr.Exists("imgflow:schema") {
		t.Fatalf("dry run printed %q (schema key set: %v); want the versions, the steps due, nothing written", out, mr.Exists("imgflow:schema"))
	}
	out = captureStdout(t, func() {
		if err := runMigrate(context.Background(), []string{"--redis", url}); err != nil {
			t.Fatal(err)
		}
	})
	if got, _ := mr.Get("imgflow:schema"); got != "1" || !strings.Contains(out, "applied") {
		t.Fatalf("migrate printed %q and stored version %q; want step 1 applied and version 1", out, got)
	}
	out = captureStdout(t, func() {
		if err := runMigrate(context.Background(), []string{"--redis", url}); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(out, "current 1, target 1") || !strings.Contains(out, "up to date") {
		t.Fatalf("second migrate printed %q; want up to date", out)
	}
}

// serve and work refuse a Redis whose layout a newer imgflow wrote, and
// say which command that was; imgflow migrate of this build refuses it too.
func TestServeAndWorkRefuseANewerSchema(t *testing.T) {
	clearEnv(t)
	mr := miniredis.RunT(t)
	mr.Set("imgflow:schema", "99")
	t.Setenv("REDIS_URL", "redis://"+mr.Addr())
	t.Setenv("UPSTREAM_URL", "http://127.0.0.1:1/api")
	t.Setenv("IMGFLOW_PUBLIC_URL", "http://127.0.0.1:1")
	t.Setenv("IMGFLOW_SECRET", "schema-test-secret-0123456789")
	for name, start := range map[string]func() error{
		"serve": func() error { return runServe(context.Background(), []string{"--addr", "127.0.0.1:0"}) },
		"work":  func() error { return runWork(context.Background(), nil) },
	} {
		err := start()
		if err == nil || !strings.Contains(err.Error(), "imgflow migrate") || !strings.Contains(err.Error(), "99") {
			t.Errorf("%s on schema 99 = %v; want a refusal naming imgflow migrate and the version", name, err)
		}
	}
	if err := runMigrate(context.Background(), nil); err == nil {
		t.Error("imgflow migrate of this build accepted schema 99")
	}
	if got, _ := mr.Get("imgflow:schema"); got != "99" {
		t.Errorf("the refusals changed the stored version to %q", got)
	}
}

// The check serve and work make writes this build's version on a fresh
// Redis, so the next start, and imgflow migrate, find it.
func TestAFreshRedisGetsTheSchemaVersionAtStart(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb, _, closeRedis, err := system.OpenRedis(context.Background(), system.RedisTarget{URL: "redis://" + mr.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer closeRedis()
	store := redisstore.New(rdb, redisstore.Options{})
	if err := store.CheckSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := migrate(context.Background(), store, migrateOptions{}, &out); err != nil || !strings.Contains(out.String(), "up to date") {
		t.Fatalf("migrate after the first start = %q, %v; want up to date", out.String(), err)
	}
}

// captureStdout runs fn with os.Stdout sent to a pipe and returns what it
// wrote.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		var b bytes.Buffer
		b.ReadFrom(r)
		done <- b.String()
	}()
	defer func() { os.Stdout = old }()
	fn()
	w.Close()
	os.Stdout = old
	return <-done
}
