package main

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// devRun is `go run . dev` started as a new user would, on free loopback
// ports and its embedded Redis, in a process group of its own.
type devRun struct {
	cmd    *exec.Cmd
	api    string // host:port of the API
	banner string
}

func startGoRunDev(t *testing.T) *devRun {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the command; not in -short")
	}
	d := systemtest.StartDev(t, 3*time.Minute, "go", "run", ".", "dev", "--addr", "127.0.0.1:0", "--upstream-addr", "127.0.0.1:0")
	return &devRun{cmd: d.Cmd, api: d.Host, banner: d.Banner}
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// The banner's "Try it" lines are copy-paste ready: KEY= first, then the
// URL, upload and base64 jobs, each of which comes back completed when run
// as printed from the repository root.
func TestDevBannerLinesWorkWhenPastedIntoAShell(t *testing.T) {
	d := startGoRunDev(t)
	key := regexp.MustCompile(`(?m)^demo key: (\S+)$`).FindStringSubmatch(d.banner)
	if key == nil || !strings.Contains(d.banner, "\n  KEY="+key[1]+"\n") {
		t.Fatalf("banner has no KEY= line with the demo key:\n%s", d.banner)
	}
	if !strings.Contains(d.banner, "Ctrl-C") {
		t.Errorf("banner does not say how to stop dev:\n%s", d.banner)
	}
	try := d.banner[strings.Index(d.banner, "\n  KEY="):]
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl to run the banner's lines with")
	}
	out, err := exec.Command("bash", "-ec", try).CombinedOutput()
	if err != nil {
		t.Fatalf("the banner's lines failed: %v\n%s\n%s", err, try, out)
	}
	if n := strings.Count(string(out), `"status":"completed"`); n != 3 {
		t.Errorf("%d of the banner's 3 jobs completed:\n%s", n, out)
	}
}

// Killing `go run . dev` (SIGTERM to go run only, as a script or an IDE
// does) stops the server too: nothing keeps listening.
func TestKillingGoRunStopsDev(t *testing.T) {
	d := startGoRunDev(t)
	if !listening(d.api) {
		t.Fatalf("dev is not listening on %s after its banner", d.api)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i := 0; listening(d.api); i++ {
		if i == 150 {
			t.Fatalf("dev still listens on %s 30 s after go run was killed", d.api)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The README's poll example takes JOB_ID from the 202 answer as printed,
// with python3 and with the grep fallback of its comment.
func TestREADMEPollExampleSetsJobID(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)[strings.Index(string(readme), "**2. Poll.**"):]
	block := section[strings.Index(section, "```sh\n")+6:]
	block = block[:strings.Index(block, "```")]
	fallback := regexp.MustCompile(`(?m)^# without python3: \.\.\. (.*)$`).FindStringSubmatch(block)
	if !strings.Contains(block, "JOB_ID=$(") || fallback == nil {
		t.Fatalf("README's poll example sets no JOB_ID from the answer, or lacks the fallback:\n%s", block)
	}
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s to run the README's lines with", tool)
		}
	}
	d := startGoRunDev(t)
	key := regexp.MustCompile(`(?m)^demo key: (\S+)$`).FindStringSubmatch(d.banner)[1]
	withGrep := strings.Replace(block, "| python3 -c 'import json, sys; print(json.load(sys.stdin)[\"id\"])'", fallback[1], 1)
	if withGrep == block {
		t.Fatalf("the python3 step of the README's poll example changed; update this test:\n%s", block)
	}
	for name, script := range map[string]string{"python3": block, "grep": withGrep} {
		script = strings.ReplaceAll(script, "127.0.0.1:8080", d.api)
		cmd := exec.Command("bash", "-ec", script)
		cmd.Env = append(os.Environ(), "KEY="+key)
		out, err := cmd.CombinedOutput()
		first, _, _ := strings.Cut(string(out), "\n")
		if err != nil || len(first) != 36 || !strings.Contains(string(out), `{"id":"`+first+`"`) {
			t.Errorf("%s: the README's poll lines printed no JOB_ID or no job (%v):\n%s", name, err, out)
		}
	}
}
