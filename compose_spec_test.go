package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// These tests load docker-compose.yml with compose-go, the loader inside
// Docker Compose (`docker compose config` prints what it returns): the
// whole file is interpolated, checked against the Compose schema and
// normalised before any command (up, down, ps, run) runs, exactly as here.
// No Docker engine is needed.

// loadCompose loads docker-compose.yml as `docker compose config` would in
// a shell whose environment is only env (no .env file here).
func loadCompose(t *testing.T, env ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"docker-compose.yml"},
		cli.WithWorkingDirectory("."), cli.WithName("imgflow"), cli.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

func mustLoadCompose(t *testing.T, env ...string) *types.Project {
	t.Helper()
	p, err := loadCompose(t, env...)
	if err != nil {
		t.Fatalf("docker compose config with environment %q fails: %v", env, err)
	}
	return p
}

// composeEnv is a service's environment as its container gets it.
func composeEnv(s types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// TestComposeCommandsWorkWithoutTheSecretExported: `docker compose down`,
// `ps` and `run --rm upstream keys create` interpolate the whole file like
// `up`; none of them may need IMGFLOW_SECRET, which only serve and work read.
func TestComposeCommandsWorkWithoutTheSecretExported(t *testing.T) {
	p := mustLoadCompose(t)
	for _, name := range []string{"server", "worker"} {
		if v := composeEnv(p.Services[name])["IMGFLOW_SECRET"]; v != "" {
			t.Errorf("service %s gets IMGFLOW_SECRET=%q with none exported, want it empty (the command then says it is missing)", name, v)
		}
	}
	if _, ok := composeEnv(p.Services["upstream"])["IMGFLOW_SECRET"]; ok {
		t.Error("the upstream service is given IMGFLOW_SECRET, which imgflow upstream does not read")
	}

	p = mustLoadCompose(t, "IMGFLOW_SECRET="+composeSecret)
	for _, name := range []string{"server", "worker"} {
		if v := composeEnv(p.Services[name])["IMGFLOW_SECRET"]; v != composeSecret {
			t.Errorf("service %s gets IMGFLOW_SECRET=%q, want the exported one", name, v)
		}
	}
}

// TestComposeServeAndWorkStopWithoutTheSecret: with the secret not
// exported, the services that need it stop and name the variable.
func TestComposeServeAndWorkStopWithoutTheSecret(t *testing.T) {
	p := mustLoadCompose(t)
	for name, command := range map[string]string{"server": "serve", "worker": "work"} {
		clearEnv(t)
		for k, v := range composeEnv(p.Services[name]) {
			t.Setenv(k, v)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := commands[command].run(ctx, nil)
		if err == nil || !strings.Contains(err.Error(), "IMGFLOW_SECRET (--secret) is required") {
			t.Errorf("service %s (imgflow %s) without IMGFLOW_SECRET: %v; want it to stop naming IMGFLOW_SECRET", name, command, err)
		}
	}
}

// TestComposeRunKeysCreateReachesRedis: `docker compose run --rm upstream
// keys create` runs `imgflow keys create` with the upstream service's
// environment, which must name the compose Redis.
func TestComposeRunKeysCreateReachesRedis(t *testing.T) {
	p := mustLoadCompose(t)
	clearEnv(t)
	for k, v := range composeEnv(p.Services["upstream"]) {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := runKeys(ctx, []string{"create"})
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("keys create with the upstream service's environment: %v; want only Redis (redis:6379, not running here) to be unreachable", err)
	}
	if got := composeEnv(p.Services["upstream"])["REDIS_URL"]; !strings.HasPrefix(got, "redis://redis:") {
		t.Errorf("upstream REDIS_URL %q, want the compose redis service", got)
	}
}

// TestComposeEveryServiceHasAHealthcheck: `docker compose ps` shows each
// long-running service's health, and depends_on waits for it. A one-shot
// job (restart "no", waited for with service_completed_successfully by
// every service that depends on it) exits before a healthcheck would run.
func TestComposeEveryServiceHasAHealthcheck(t *testing.T) {
	p := mustLoadCompose(t, "IMGFLOW_SECRET="+composeSecret)
	for name, s := range p.Services {
		if oneShot(p, name) {
			continue
		}
		hc := s.HealthCheck
		if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] == "NONE" {
			t.Errorf("service %s has no healthcheck", name)
		}
	}
	worker := p.Services["worker"]
	addr := composeEnv(worker)["IMGFLOW_OPS_ADDR"]
	_, port, _ := strings.Cut(addr, ":")
	if test := strings.Join(worker.HealthCheck.Test, " "); port == "" || !strings.Contains(test, ":"+port+"/health") {
		t.Errorf("worker healthcheck %q does not ask /health on IMGFLOW_OPS_ADDR %q", test, addr)
	}
}

// oneShot reports a job that runs once: restart "no", and every service
// that depends on it waits for it to complete.
func oneShot(p *types.Project, name string) bool {
	if p.Services[name].Restart != "no" {
		return false
	}
	waited := false
	for _, s := range p.Services {
		if d, ok := s.DependsOn[name]; ok {
			if d.Condition != types.ServiceConditionCompletedSuccessfully {
				return false
			}
			waited = true
		}
	}
	return waited
}

// pinnedTag is a tag fixed to at least a minor version (redis:7.4,
// redis:7.4.2) or a dated release (MinIO's RELEASE.2025-...).
var pinnedTag = regexp.MustCompile(`:(\d+\.\d+(\.\d+)?(-[\w.]+)?|RELEASE\.[\w.-]+)(@sha256:[0-9a-f]{64})?$`)

// TestComposePinsImagesAndBuildsImgflowOnce: third-party images are pinned
// to a minor version at least; the imgflow image is built by one service
// and run by the others without a second build or a pull.
func TestComposePinsImagesAndBuildsImgflowOnce(t *testing.T) {
	p := mustLoadCompose(t, "IMGFLOW_SECRET="+composeSecret)
	var builders []string
	var built string
	for name, s := range p.Services {
		if s.Build != nil {
			builders = append(builders, name)
			built = s.Image
		}
	}
	if len(builders) != 1 || built == "" {
		t.Fatalf("services with build: %v (image %q); want exactly one, with an image name the others run", builders, built)
	}
	runners := 0
	for name, s := range p.Services {
		switch {
		case s.Image == built && s.Build == nil:
			runners++
			if s.PullPolicy != types.PullPolicyNever {
				t.Errorf("service %s runs the built image %s with pull_policy %q, want never (it exists only locally)", name, built, s.PullPolicy)
			}
		case s.Image == built:
		case !pinnedTag.MatchString(s.Image):
			t.Errorf("service %s: image %q is not pinned to a minor version or release", name, s.Image)
		}
	}
	if runners < 2 {
		t.Errorf("%d services run the built image %s, want server and worker", runners, built)
	}
}

// TestComposeDocumentsNoRequiredVariable: a ${VAR:?} or ${VAR?} anywhere
// would stop every command when VAR is unset, so the file has none.
func TestComposeDocumentsNoRequiredVariable(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		code, _, _ := strings.Cut(line, "#")
		if regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:?\?`).MatchString(code) {
			t.Errorf("docker-compose.yml:%d requires a variable: %s", i+1, strings.TrimSpace(line))
		}
	}
}
