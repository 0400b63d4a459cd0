package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of docker-compose.yml these tests hold to the
// command line. yaml.v3 resolves the file's anchors and merge keys.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image         string            `yaml:"image"`
	Build         any               `yaml:"build"`
	Command       []string          `yaml:"command"`
	Environment   map[string]string `yaml:"environment"`
	Ports         []string          `yaml:"ports"`
	Volumes       []string          `yaml:"volumes"`
	ContainerName string            `yaml:"container_name"`
	Healthcheck   *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// composeSecret stands in for the IMGFLOW_SECRET the operator exports.
const composeSecret = "compose-test-secret-0123456789"

func readCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if len(f.Services) == 0 {
		t.Fatal("docker-compose.yml has no services")
	}
	return f
}

// interpolation matches ${NAME}, ${NAME:-default} and ${NAME:?message}.
var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-?])([^}]*))?\}`)

// interpolate resolves value as compose would with only IMGFLOW_SECRET
// exported: defaults apply, and a required variable fails the test (the
// file must load with nothing exported; compose_spec_test.go loads it with
// Compose's own loader).
func interpolate(t *testing.T, value string) string {
	t.Helper()
	return interpolation.ReplaceAllStringFunc(value, func(m string) string {
		sub := interpolation.FindStringSubmatch(m)
		switch {
		case sub[1] == "IMGFLOW_SECRET":
			return composeSecret
		case sub[2] == "-":
			return sub[3]
		default:
			t.Errorf("docker-compose.yml needs $%s exported; no variable should be required", sub[1])
			return ""
		}
	})
}

// imgflowServices are the services that run the imgflow image, with the
// subcommand each runs.
func imgflowServices(t *testing.T, f composeFile) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, s := range f.Services {
		if s.Image == "imgflow:local" || s.Build != nil {
			if len(s.Command) == 0 {
				t.Errorf("service %s runs imgflow without a command (serve, work, upstream)", name)
				continue
			}
			out[name] = s.Command[0]
		}
	}
	return out
}

// helpEnv runs `imgflow <command> --help` and returns the environment
// variables its flags name ("[$VAR]" in the help text).
func helpEnv(t *testing.T, command string) []string {
	t.Helper()
	cmd, ok := commands[command]
	if !ok {
		t.Fatalf("imgflow has no command %q", command)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	out := make(chan string)
	go func() { b, _ := io.ReadAll(r); out <- string(b) }()
	runErr := cmd.run(context.Background(), []string{"--help"})
	os.Stderr = stderr
	w.Close()
	help := <-out
	r.Close()
	if runErr != nil && !strings.Contains(runErr.Error(), "help requested") {
		t.Fatalf("imgflow %s --help: %v", command, runErr)
	}
	var vars []string
	for _, m := range regexp.MustCompile(`\[\$([A-Z0-9_]+)\]`).FindAllStringSubmatch(help, -1) {
		vars = append(vars, m[1])
	}
	if len(vars) == 0 {
		t.Fatalf("imgflow %s --help names no environment variable:\n%s", command, help)
	}
	return vars
}

func TestComposeSetsOnlyVariablesItsCommandsRead(t *testing.T) {
	f := readCompose(t)
	for name, command := range imgflowServices(t, f) {
		known := helpEnv(t, command)
		for v := range f.Services[name].Environment {
			if !slices.Contains(known, v) {
				t.Errorf("service %s sets %s, which `imgflow %s` does not read (it reads %v)", name, v, command, known)
			}
		}
	}
}

func TestComposeConfigurationPassesTheCommandsOwnChecks(t *testing.T) {
	f := readCompose(t)
	for name, command := range imgflowServices(t, f) {
		clearEnv(t)
		for _, v := range []string{"IMGFLOW_UPSTREAM_ADDR", "UPSTREAM_LATENCY", "UPSTREAM_FAIL_RATE"} {
			t.Setenv(v, "")
			os.Unsetenv(v)
		}
		for k, v := range f.Services[name].Environment {
			t.Setenv(k, interpolate(t, v))
		}
		if _, ok := f.Services[name].Environment["IMGFLOW_OPS_ADDR"]; ok {
			t.Setenv("IMGFLOW_OPS_ADDR", "127.0.0.1:0") // listen on loopback, on any free port, here
		}
		// With ctx already cancelled, a command whose settings pass its
		// checks stops while it waits for Redis: serve and work cleanly (as
		// on SIGTERM), the others saying Redis does not answer.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := commands[command].run(ctx, nil)
		if clean := err == nil && (command == "serve" || command == "work"); !clean && (err == nil || strings.Contains(err.Error(), "bad configuration") || !strings.Contains(err.Error(), "does not answer")) {
			t.Errorf("service %s (imgflow %s) with its compose environment: %v; want its checks to pass and only Redis to be unreachable", name, command, err)
		}
	}
}

func TestComposeWiresServicesByTheirNamesAndPorts(t *testing.T) {
	f := readCompose(t)
	services := imgflowServices(t, f)
	byCommand := map[string]string{}
	for name, command := range services {
		byCommand[command] = name
	}
	for _, c := range []string{"serve", "work", "upstream"} {
		if byCommand[c] == "" {
			t.Fatalf("no service runs imgflow %s", c)
		}
	}
	env := func(service, v string) string { return interpolate(t, f.Services[service].Environment[v]) }

	for name := range services {
		redisURL, err := url.Parse(env(name, "REDIS_URL"))
		if err != nil || f.Services[redisURL.Hostname()].Image == "" || !strings.HasPrefix(f.Services[redisURL.Hostname()].Image, "redis") {
			t.Errorf("service %s: REDIS_URL %q does not name the compose Redis service", name, env(name, "REDIS_URL"))
		}
	}

	up := byCommand["upstream"]
	_, upPort, _ := net.SplitHostPort(env(up, "IMGFLOW_UPSTREAM_ADDR"))
	upHost, _, _ := net.SplitHostPort(env(up, "IMGFLOW_UPSTREAM_ADDR"))
	if upHost == "127.0.0.1" || upHost == "localhost" {
		t.Errorf("upstream listens on %s: other containers cannot reach it", upHost)
	}
	for _, c := range []string{"serve", "work"} {
		name := byCommand[c]
		want := "http://" + up + ":" + upPort + "/api"
		if got := env(name, "UPSTREAM_URL"); got != want {
			t.Errorf("service %s: UPSTREAM_URL %q, want %q (the upstream service's listen port)", name, got, want)
		}
	}

	srv := byCommand["serve"]
	_, srvPort, _ := net.SplitHostPort(env(srv, "IMGFLOW_ADDR"))
	if !slices.ContainsFunc(f.Services[srv].Ports, func(p string) bool { return strings.HasSuffix(p, ":"+srvPort) }) {
		t.Errorf("server ports %v do not publish IMGFLOW_ADDR's port %s", f.Services[srv].Ports, srvPort)
	}
	for name, health := range map[string]string{srv: ":" + srvPort + "/health", up: ":" + upPort + "/api/health"} {
		hc := f.Services[name].Healthcheck
		if hc == nil || !strings.Contains(strings.Join(hc.Test, " "), health) {
			t.Errorf("service %s: healthcheck %v, want one on %s", name, hc, health)
		}
	}
}

func TestComposeWorkersScaleAndWaitForHealthyDependencies(t *testing.T) {
	f := readCompose(t)
	for name, s := range f.Services {
		if s.ContainerName != "" {
			t.Errorf("service %s has container_name %q: it could not be scaled", name, s.ContainerName)
		}
		for dep, d := range s.DependsOn {
			if f.Services[dep].Healthcheck != nil && d.Condition != "service_healthy" {
				t.Errorf("service %s depends on %s with condition %q, want service_healthy", name, dep, d.Condition)
			}
		}
	}
	for name, command := range imgflowServices(t, f) {
		if command == "work" && len(f.Services[name].Ports) > 0 {
			t.Errorf("worker service %s publishes ports %v: `--scale %s=3` would clash", name, f.Services[name].Ports, name)
		}
		if command != "upstream" {
			if _, ok := f.Services[name].DependsOn["redis"]; !ok {
				t.Errorf("service %s does not wait for redis", name)
			}
		}
	}
	redis := f.Services["redis"]
	if !slices.Contains(redis.Command, "--appendonly") || len(redis.Volumes) == 0 {
		t.Errorf("redis: command %v, volumes %v; want the append-only file on, in a volume", redis.Command, redis.Volumes)
	}
}

func TestComposeKeepsBlobsInItsS3Service(t *testing.T) {
	f := readCompose(t)
	for name, command := range imgflowServices(t, f) {
		if command == "upstream" {
			continue
		}
		env := func(v string) string { return interpolate(t, f.Services[name].Environment[v]) }
		u, err := url.Parse(env("IMGFLOW_BLOB_STORE"))
		if err != nil || u.Scheme != "s3" {
			t.Errorf("service %s: IMGFLOW_BLOB_STORE %q, want the s3 service's bucket", name, env("IMGFLOW_BLOB_STORE"))
			continue
		}
		endpoint, _ := url.Parse(u.Query().Get("endpoint"))
		s3 := f.Services[endpoint.Hostname()]
		if !strings.HasPrefix(s3.Image, "minio/minio") {
			t.Errorf("service %s: blob endpoint %s is not the compose MinIO service", name, endpoint)
		}
		if env("AWS_ACCESS_KEY_ID") != interpolate(t, s3.Environment["MINIO_ROOT_USER"]) || env("AWS_SECRET_ACCESS_KEY") != interpolate(t, s3.Environment["MINIO_ROOT_PASSWORD"]) {
			t.Errorf("service %s: S3 credentials differ from the s3 service's", name)
		}
		if d, ok := f.Services[name].DependsOn["s3-bucket"]; !ok || d.Condition != "service_completed_successfully" {
			t.Errorf("service %s does not wait for the bucket to be made", name)
		}
		if mb := strings.Join(f.Services["s3-bucket"].Command, " "); !strings.Contains(mb, "s3/"+u.Host) {
			t.Errorf("s3-bucket makes %q, not the bucket %s that %s uses", mb, u.Host, name)
		}
	}
}
