package systemtest

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DevProcess is a running `imgflow dev` (built binary or `go run`), started
// as a new user would: on free loopback ports, its embedded Redis and
// reference upstream, in a process group of its own that the test's
// cleanup kills.
type DevProcess struct {
	Cmd    *exec.Cmd
	Host   string // host:port of the API
	API    string // http://host:port
	Key    string // the demo key
	Banner string // everything dev printed up to its banner's last line
}

var (
	devAPILine = regexp.MustCompile(`^imgflow API: http://(\S+)$`)
	devKeyLine = regexp.MustCompile(`^demo key: (\S+)$`)
)

// StartDev runs name with args (which should hold `dev` and its loopback
// addresses) and waits up to within for the banner. REDIS_URL,
// UPSTREAM_URL and IMGFLOW_* are left out of its environment: dev uses its
// embedded parts and the defaults, whatever the test's environment says.
func StartDev(t *testing.T, within time.Duration, name string, args ...string) *DevProcess {
	t.Helper()
	cmd := exec.Command(name, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") && !strings.HasPrefix(kv, "UPSTREAM_URL=") && !strings.HasPrefix(kv, "IMGFLOW_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group: go run and dev
		cmd.Wait()
	})
	d := &DevProcess{Cmd: cmd}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(within)
	var banner strings.Builder
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("imgflow dev exited before its banner:\n%s", banner.String())
			}
			banner.WriteString(line + "\n")
			if m := devAPILine.FindStringSubmatch(line); m != nil {
				d.Host, d.API = m[1], "http://"+m[1]
			}
			if m := devKeyLine.FindStringSubmatch(line); m != nil {
				d.Key = m[1]
			}
			if strings.Contains(line, "photo.webp") { // the banner's last line
				d.Banner = banner.String()
				go func() {
					for range lines { // the process's log, unread
					}
				}()
				return d
			}
		case <-deadline:
			t.Fatalf("no banner from imgflow dev within %v:\n%s", within, banner.String())
		}
	}
}
