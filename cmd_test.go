package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clearEnv unsets the variables the commands read, for this test only.
func clearEnv(t *testing.T) {
	for _, v := range []string{"REDIS_URL", "UPSTREAM_URL", "IMGFLOW_PUBLIC_URL", "IMGFLOW_SECRET", "IMGFLOW_ADDR",
		"IMGFLOW_ALLOW_PRIVATE_URLS", "IMGFLOW_RESULT_TTL", "IMGFLOW_CONCURRENCY", "IMGFLOW_QUEUE"} {
		if old, ok := os.LookupEnv(v); ok {
			os.Unsetenv(v)
			t.Cleanup(func() { os.Setenv(v, old) })
		}
	}
}

func TestServeAndWorkRefuseToStartWithoutTheirSettings(t *testing.T) {
	clearEnv(t)
	for name, run := range map[string]func(context.Context, []string) error{"serve": runServe, "work": runWork} {
		err := run(context.Background(), nil)
		if err == nil {
			t.Fatalf("%s started without configuration", name)
		}
		for _, v := range []string{"REDIS_URL", "UPSTREAM_URL", "IMGFLOW_SECRET", "IMGFLOW_PUBLIC_URL"} {
			if !strings.Contains(err.Error(), v) {
				t.Errorf("%s: error %q does not name %s", name, err, v)
			}
		}
	}
}

func TestAWrongEnvironmentValueNamesTheVariable(t *testing.T) {
	clearEnv(t)
	t.Setenv("IMGFLOW_RESULT_TTL", "one day")
	t.Setenv("IMGFLOW_ALLOW_PRIVATE_URLS", "sure")
	err := runServe(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "IMGFLOW_RESULT_TTL") || !strings.Contains(err.Error(), "IMGFLOW_ALLOW_PRIVATE_URLS") {
		t.Fatalf("error = %v; want it to name IMGFLOW_RESULT_TTL and IMGFLOW_ALLOW_PRIVATE_URLS", err)
	}
	t.Setenv("IMGFLOW_RESULT_TTL", "24h")
	t.Setenv("IMGFLOW_ALLOW_PRIVATE_URLS", "false")
	t.Setenv("REDIS_URL", "mysql://nope")
	t.Setenv("UPSTREAM_URL", "compress.example.com/api")
	t.Setenv("IMGFLOW_SECRET", "short")
	t.Setenv("IMGFLOW_PUBLIC_URL", "https://imgflow.example.com")
	err = runServe(context.Background(), nil)
	for _, v := range []string{"REDIS_URL", "UPSTREAM_URL", "IMGFLOW_SECRET"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("error = %v; want it to name %s", err, v)
		}
	}
}

func TestServeHelpListsEveryEnvironmentVariable(t *testing.T) {
	var out bytes.Buffer
	fs := newFlagSet("serve", "")
	fs.SetOutput(&out)
	var o serveOptions
	fs.String(&o.Addr, "addr", "IMGFLOW_ADDR", ":8080", "listen address")
	addAppFlags(fs, &o.appOptions)
	fs.Usage()
	for _, v := range []string{"IMGFLOW_ADDR", "REDIS_URL", "UPSTREAM_URL", "IMGFLOW_PUBLIC_URL", "IMGFLOW_SECRET", "IMGFLOW_ALLOW_PRIVATE_URLS", "IMGFLOW_RESULT_TTL"} {
		if !strings.Contains(out.String(), "$"+v) {
			t.Errorf("serve --help does not mention $%s:\n%s", v, out.String())
		}
	}
}

// TestDefinitionsCommandWritesTheCommittedFiles holds the committed
// definitions equal to what the README's regenerate command writes.
func TestDefinitionsCommandWritesTheCommittedFiles(t *testing.T) {
	out := t.TempDir()
	if err := runDefinitions(context.Background(), []string{"--out", out, "--base-url", "https://imgflow.example.com"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		fresh, _ := os.ReadFile(path)
		committed, err := os.ReadFile(filepath.Join("definitions", rel))
		if err != nil {
			t.Errorf("%s is written but not committed: run the README's regenerate command", rel)
			return nil
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("definitions/%s differs from a fresh export: run the README's regenerate command", rel)
		}
		n++
		return nil
	})
	if err != nil || n < 5 {
		t.Fatalf("compared %d files (%v); want every platform's files", n, err)
	}
}
