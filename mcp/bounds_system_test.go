package mcp_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// The official Go SDK's client, connected with the API key as a Bearer
// token: it lists the tools, compresses an image by URL and reads the job
// back with get_job.
func TestGoSDKClientListsCompressesByURLAndReadsTheJob(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp() // Authorization: Bearer <key>
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 8 {
		t.Fatalf("tools/list: %v, %d tools; want 8", err, len(tools.Tools))
	}
	var job, again systemtest.JobView
	systemtest.CallTool(t, cs, "compress_image", map[string]any{"image_url": s.Samples + "/photo.jpg"}, &job)
	res := systemtest.CallTool(t, cs, "get_job", map[string]any{"id": job.ID, "wait_seconds": 5}, &again)
	if res.IsError || again.ID != job.ID || again.Status != "completed" || again.Result == nil || again.Result.FileURL == "" {
		t.Fatalf("get_job answered %s %+v; want the completed job %s", systemtest.ToolText(res), again, job.ID)
	}
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// One 9.5 MiB upload named 40 times in one compress_many is refused before
// any upload is read, naming the repeated item; the serve process (this
// test's) grows by far less than 200 MiB.
func TestCompressManyRefusesARepeatedUploadBeforeReadingIt(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp()
	var ticket struct {
		File     struct{ URI string }
		Transfer struct{ URL string }
	}
	systemtest.CallTool(t, cs, "prepare_upload", map[string]any{"name": "big.png"}, &ticket)
	big := make([]byte, 19<<19) // 9.5 MiB
	copy(big, "\x89PNG\r\n\x1a\n")
	rand.Read(big[8:])
	req, _ := http.NewRequest(http.MethodPut, ticket.Transfer.URL, bytes.NewReader(big))
	put, err := http.DefaultClient.Do(req)
	if err != nil || put.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %v %v", err, put)
	}
	put.Body.Close()
	big = nil
	before := peakRSS(t)
	items := make([]map[string]any, 40)
	for i := range items {
		items[i] = map[string]any{"upload": ticket.File.URI}
	}
	res := systemtest.CallTool(t, cs, "compress_many", map[string]any{"items": items}, nil)
	grew := peakRSS(t) - before
	t.Logf("compress_many naming one 9.5 MiB upload 40 times: peak RSS %d MiB before, grew %d MiB", before>>20, grew>>20)
	if !res.IsError || !strings.Contains(systemtest.ToolText(res), "items[1].upload") || !strings.Contains(systemtest.ToolText(res), "once per call") {
		t.Errorf("compress_many answered %s; want a tool error naming items[1].upload as a repeat", systemtest.ToolText(res))
	}
	if grew > 200<<20 {
		t.Errorf("peak RSS grew %d MiB; want at most 200", grew>>20)
	}
}

// A JSON-RPC batch (here 30 get_job calls with previews) is refused whole
// with a JSON-RPC error, whatever protocol version it names: nothing in it
// runs.
func TestJSONRPCBatchIsRefused(t *testing.T) {
	s := startSystem(t)
	before := peakRSS(t)
	var calls []string
	for i := range 30 {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_job","arguments":{"id":"x","preview":true}}}`, i))
	}
	req, _ := http.NewRequest(http.MethodPost, s.API+"/mcp", strings.NewReader("["+strings.Join(calls, ",")+"]"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.Key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got struct {
		Error struct {
			Code    int
			Message string
		}
	}
	json.NewDecoder(res.Body).Decode(&got)
	t.Logf("a batch of 30 previews: peak RSS grew %d MiB", (peakRSS(t)-before)>>20)
	if res.StatusCode != http.StatusBadRequest || got.Error.Code != -32600 || !strings.Contains(got.Error.Message, "batches") {
		t.Errorf("batch answered %d %+v; want 400 with JSON-RPC error -32600", res.StatusCode, got)
	}
}
