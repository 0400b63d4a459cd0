package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector/webhook"
)

// readmeBlock returns the body of the first ```lang block after marker in
// the README.
func readmeBlock(t *testing.T, marker, lang string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), marker)
	if i < 0 {
		t.Fatalf("README has no %q", marker)
	}
	rest := string(readme)[i:]
	start := strings.Index(rest, "```"+lang+"\n")
	if start < 0 {
		t.Fatalf("README has no ```%s block after %q", lang, marker)
	}
	rest = rest[start+len(lang)+4:]
	return rest[:strings.Index(rest, "```")]
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestREADMECallbackExampleDeliversASignedJob follows the README's callback
// example as a newcomer would, against `go run . dev`: save the receiver,
// start it with the key's secret, send the job; the receiver must print
// that the signature checked out.
func TestREADMECallbackExampleDeliversASignedJob(t *testing.T) {
	for _, tool := range []string{"curl", "python3", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s to run the README's lines with", tool)
		}
	}
	receiver := readmeBlock(t, "**3. Callback.**", "sh")
	send := readmeBlock(t, "Then start it in the background", "sh")
	if !strings.Contains(receiver, "cat > receiver.py") || !strings.Contains(send, "python3 receiver.py &") {
		t.Fatalf("the README's callback example changed; update this test:\n%s\n%s", receiver, send)
	}
	d := startGoRunDev(t)
	key := regexp.MustCompile(`(?m)^demo key: (\S+)$`).FindStringSubmatch(d.banner)[1]
	port := freePort(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	script := strings.Join([]string{receiver, send,
		`for i in $(seq 150); do grep -q 'signature OK' "$OUT" && break; sleep 0.2; done`,
		`grep -q "signature OK" "$OUT" || curl -s "http://127.0.0.1:8080/v1/jobs?limit=1" -H "X-API-Key: $KEY"`, `kill %1`}, "\n")
	script = strings.ReplaceAll(script, "127.0.0.1:8080", d.api)
	script = strings.ReplaceAll(script, "9000", port)
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("bash", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KEY="+key, "OUT="+out)
	cmd.Stdout, cmd.Stderr = f, f
	runErr := cmd.Run()
	got, _ := os.ReadFile(out)
	if runErr != nil || !regexp.MustCompile(`(?m)^signature OK: job\.completed [0-9a-f-]{36} http://\S+/file\?token=`).Match(got) {
		t.Errorf("the README's callback example (%v) printed no verified delivery:\n%s", runErr, got)
	}
}

// TestREADMENodeSnippetVerifiesSignatures runs the README's Node check on a
// delivery signed by imgflow's sender, and on a tampered and a stale one.
func TestREADMENodeSnippetVerifiesSignatures(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node to run the README's snippet with")
	}
	snippet := readmeBlock(t, "The same check in Node", "js")
	raw := make([]byte, 24)
	rand.Read(raw)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(raw)
	body := `{"type":"job.completed","data":{"id":"x"}}`
	sign := func(ts time.Time) string {
		sig, err := webhook.Sign(secret, "msg_1", ts, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	now := time.Now()
	check := func(ts time.Time, sig, body string) string {
		return fmt.Sprintf("verify(%q, {%q: %q, %q: %q, %q: %q}, Buffer.from(%q))",
			secret, "webhook-id", "msg_1", "webhook-timestamp", fmt.Sprint(ts.Unix()), "webhook-signature", sig, body)
	}
	script := snippet + fmt.Sprintf("\nconsole.log([%s, %s, %s, %s].join(' '));\n",
		check(now, sign(now), body),
		check(now, "v1,bogus "+sign(now), body), // several signatures (a secret rotation): one matches
		check(now, sign(now), strings.Replace(body, `"x"`, `"y"`, 1)),
		check(now.Add(-time.Hour), sign(now.Add(-time.Hour)), body))
	out, err := exec.Command("node", "-e", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "true true false false" {
		t.Errorf("README's Node snippet: %v: %s; want true true false false (good, good among two, tampered, stale)", err, out)
	}
}
