package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/internal/version"
)

// clearEnv unsets the variables the commands read, for this test only.
func clearEnv(t *testing.T) {
	for _, v := range []string{"REDIS_URL", "UPSTREAM_URL", "IMGFLOW_PUBLIC_URL", "IMGFLOW_SECRET", "IMGFLOW_ADDR",
		"IMGFLOW_ALLOW_PRIVATE_URLS", "IMGFLOW_ALLOW_HOSTS", "IMGFLOW_RESULT_TTL", "IMGFLOW_CONCURRENCY", "IMGFLOW_QUEUE", "IMGFLOW_LOG_LEVEL", "IMGFLOW_DISPATCH"} {
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
	t.Setenv("IMGFLOW_CONCURRENCY", "many")
	err := runWork(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "IMGFLOW_RESULT_TTL") || !strings.Contains(err.Error(), "IMGFLOW_CONCURRENCY") {
		t.Fatalf("error = %v; want it to name IMGFLOW_RESULT_TTL and IMGFLOW_CONCURRENCY", err)
	}
	t.Setenv("IMGFLOW_RESULT_TTL", "24h")
	t.Setenv("IMGFLOW_CONCURRENCY", "4")
	t.Setenv("IMGFLOW_ALLOW_HOSTS", "10.0.0.0/8,http://n8n.lan:5678/")
	t.Setenv("REDIS_URL", "mysql://nope")
	t.Setenv("UPSTREAM_URL", "compress.example.com/api")
	t.Setenv("IMGFLOW_SECRET", "short")
	t.Setenv("IMGFLOW_PUBLIC_URL", "https://imgflow.example.com")
	err = runServe(context.Background(), nil)
	for _, v := range []string{"REDIS_URL", "UPSTREAM_URL", "IMGFLOW_SECRET", "IMGFLOW_ALLOW_HOSTS"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("error = %v; want it to name %s", err, v)
		}
	}
}

// IMGFLOW_ALLOW_PRIVATE_URLS used to turn the guard off; a deployment that
// still sets it stops with what to use instead rather than running with
// the guard on where it expected it off (or the reverse).
func TestTheRemovedAllowPrivateURLsStopsWithWhatToUseInstead(t *testing.T) {
	clearEnv(t)
	for _, v := range []string{"true", "1", "sure"} {
		t.Setenv("IMGFLOW_ALLOW_PRIVATE_URLS", v)
		for name, run := range map[string]func(context.Context, []string) error{"serve": runServe, "work": runWork, "dev": runDev} {
			err := run(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), "IMGFLOW_ALLOW_PRIVATE_URLS is no longer supported") || !strings.Contains(err.Error(), "IMGFLOW_ALLOW_HOSTS") {
				t.Errorf("%s with IMGFLOW_ALLOW_PRIVATE_URLS=%s: error = %v; want it to point to IMGFLOW_ALLOW_HOSTS", name, v, err)
			}
		}
	}
	t.Setenv("IMGFLOW_ALLOW_PRIVATE_URLS", "false")
	err := runServe(context.Background(), nil)
	if err == nil || strings.Contains(err.Error(), "IMGFLOW_ALLOW_PRIVATE_URLS") {
		t.Errorf("IMGFLOW_ALLOW_PRIVATE_URLS=false: error = %v; want only the missing settings", err)
	}
}

func TestAllowHostFlagsReplaceTheEnvironmentAndAdd(t *testing.T) {
	clearEnv(t)
	t.Setenv("IMGFLOW_ALLOW_HOSTS", "10.0.0.0/8, n8n.lan:5678")
	parse := func(args ...string) string {
		var o system.Options
		fs := newFlagSet("serve", "")
		addAppFlags(fs, &o)
		if err := fs.parse(args); err != nil {
			t.Fatal(err)
		}
		p, err := o.AllowPolicy()
		if err != nil {
			t.Fatal(err)
		}
		return p.String()
	}
	if got, want := parse(), "10.0.0.0/8,n8n.lan:5678"; got != want {
		t.Errorf("from the environment: %s, want %s", got, want)
	}
	if got, want := parse("--allow-host", "192.168.1.0/24", "--allow-host", "minio.internal:9000,[fd00::5]:443"), "192.168.1.0/24,minio.internal:9000,[fd00::5]:443"; got != want {
		t.Errorf("from flags: %s, want %s", got, want)
	}
}

// serve and work dispatch fairly unless told asynq (IMGFLOW_DISPATCH).
func TestDispatchFlagDefaultsToFair(t *testing.T) {
	clearEnv(t)
	parse := func(args ...string) string {
		var o system.Options
		fs := newFlagSet("work", "")
		addAppFlags(fs, &o)
		if err := fs.parse(args); err != nil {
			t.Fatal(err)
		}
		return o.Dispatch
	}
	if got := parse(); got != "fair" {
		t.Errorf("default dispatch %q, want fair", got)
	}
	t.Setenv("IMGFLOW_DISPATCH", "asynq")
	if got := parse(); got != "asynq" {
		t.Errorf("IMGFLOW_DISPATCH=asynq: dispatch %q", got)
	}
}

func TestServeHelpListsEveryEnvironmentVariable(t *testing.T) {
	var out bytes.Buffer
	fs := newFlagSet("serve", "")
	fs.SetOutput(&out)
	var o serveOptions
	fs.String(&o.Addr, "addr", "IMGFLOW_ADDR", ":8080", "listen address")
	addAppFlags(fs, &o.Options)
	fs.Usage()
	for _, v := range []string{"IMGFLOW_ADDR", "REDIS_URL", "UPSTREAM_URL", "IMGFLOW_PUBLIC_URL", "IMGFLOW_SECRET", "IMGFLOW_ALLOW_HOSTS", "IMGFLOW_RESULT_TTL"} {
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

// TestHelpOffersOnlyTheFlagsTheCommandReads: the HTTP API's own settings
// are offered by serve and dev, never by work, whose process has no API.
func TestHelpOffersOnlyTheFlagsTheCommandReads(t *testing.T) {
	apiOnly := []string{"IMGFLOW_MAX_JOBS_PER_KEY", "IMGFLOW_MAX_LARGE_BODIES", "IMGFLOW_KEY_GRACE", "IMGFLOW_ADMIN_TOKEN", "IMGFLOW_ADDR"}
	for _, command := range []string{"serve", "dev"} {
		vars := helpEnv(t, command)
		for _, v := range apiOnly {
			if !slices.Contains(vars, v) {
				t.Errorf("imgflow %s --help does not offer $%s", command, v)
			}
		}
	}
	vars := helpEnv(t, "work")
	for _, v := range apiOnly {
		if slices.Contains(vars, v) {
			t.Errorf("imgflow work --help offers $%s, which only the API reads", v)
		}
	}
	for _, v := range []string{"IMGFLOW_CONCURRENCY", "IMGFLOW_OPS_ADDR", "REDIS_URL", "IMGFLOW_SECRET"} {
		if !slices.Contains(vars, v) {
			t.Errorf("imgflow work --help does not offer $%s", v)
		}
	}
}

// TestVersionSaysVersionCommitAndGo: `imgflow version` prints
// "imgflow <version> (<commit>, <go version>)", never a bare word that
// reads like the dev command.
func TestVersionSaysVersionCommitAndGo(t *testing.T) {
	var out bytes.Buffer
	printVersion(&out)
	want := "imgflow " + version.String() + " ("
	if !strings.HasPrefix(out.String(), want) || !regexp.MustCompile(`^imgflow \d+\.\d+\.\d+ \([^,]+, go\d[^)]*\)\n$`).MatchString(out.String()) {
		t.Errorf("version prints %q, want imgflow %s (<commit>, <go version>)", out.String(), version.String())
	}
	commit = "0123456789ab"
	t.Cleanup(func() { commit = "" })
	out.Reset()
	printVersion(&out)
	if want := "imgflow " + version.String() + " (0123456789ab, " + runtime.Version() + ")\n"; out.String() != want {
		t.Errorf("with -X main.commit: %q, want %q", out.String(), want)
	}
}

// Every command takes --log-level and IMGFLOW_LOG_LEVEL; the flag wins, and
// a level that is not one is refused by name.
func TestLogLevelFromFlagAndEnvironment(t *testing.T) {
	clearEnv(t)
	defer logLevel.Set(slog.LevelInfo)
	for _, cmd := range []string{"dev", "serve", "work", "upstream", "keys create", "definitions"} {
		t.Setenv("IMGFLOW_LOG_LEVEL", "warn")
		fs := newFlagSet(cmd, "")
		if err := fs.parse(nil); err != nil || logLevel.Level() != slog.LevelWarn {
			t.Fatalf("%s: IMGFLOW_LOG_LEVEL=warn gave %v, %v", cmd, logLevel.Level(), err)
		}
		fs = newFlagSet(cmd, "")
		if err := fs.parse([]string{"--log-level", "debug"}); err != nil || logLevel.Level() != slog.LevelDebug {
			t.Fatalf("%s: --log-level debug gave %v, %v", cmd, logLevel.Level(), err)
		}
	}
	t.Setenv("IMGFLOW_LOG_LEVEL", "loud")
	if err := newFlagSet("work", "").parse(nil); err == nil || !strings.Contains(err.Error(), "IMGFLOW_LOG_LEVEL") {
		t.Fatalf("IMGFLOW_LOG_LEVEL=loud: %v, want an error naming the variable", err)
	}
}

// The chart sets IMGFLOW_SHUTDOWN_TIMEOUT to the job deadline; a value that
// would requeue every running task at once is refused, naming the variable.
func TestWorkRefusesANonPositiveShutdownTimeout(t *testing.T) {
	clearEnv(t)
	for _, v := range []string{"0s", "-1m", "soon"} {
		t.Setenv("IMGFLOW_SHUTDOWN_TIMEOUT", v)
		err := runWork(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), "IMGFLOW_SHUTDOWN_TIMEOUT") {
			t.Errorf("IMGFLOW_SHUTDOWN_TIMEOUT=%s: error = %v; want it to name IMGFLOW_SHUTDOWN_TIMEOUT", v, err)
		}
	}
}
