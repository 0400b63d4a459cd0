package system_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// Jobs that fail for the caller's mistake (a URL that answers 404, bytes
// that are not an image) end in the job's record only: nothing in asynq's
// archive, which the dead-letter alert watches, and nothing counted as a
// system failure.
func TestCallersMistakesLeaveTheArchiveEmpty(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	for path, code := range map[string]string{"/missing.png": "fetch_failed", "/not-an-image.png": ""} {
		st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(`{"image_url":"`+s.Samples+path+`"}`), auth)
		job := systemtest.DecodeJob(t, st, body)
		if job.Status != "failed" || (code != "" && !strings.Contains(string(body), code)) {
			t.Fatalf("%s: status %d %s, want a failed job", path, st, body)
		}
	}
	in := asynq.NewInspectorFromRedisClient(s.Redis.Client)
	var archived []*asynq.TaskInfo
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// The task ends just after the job's record: give asynq a moment to
		// archive, if it were going to.
		archived, _ = in.ListArchivedTasks(s.Redis.Queue())
		if len(archived) > 0 {
			break
		}
	}
	if len(archived) != 0 {
		t.Errorf("%d tasks archived after two caller mistakes, want none: %+v", len(archived), archived[0])
	}
	_, scrape := s.OpsGet("/metrics")
	if !strings.Contains(scrape, `imgflow_jobs_failed_total{code="fetch_failed"} 1`) {
		t.Errorf("/metrics lacks the failed job:\n%.3000s", scrape)
	}
	if strings.Contains(scrape, "imgflow_jobs_system_failed_total{") {
		t.Errorf("caller mistakes counted as system failures:\n%s", grepLines(scrape, "imgflow_jobs_system_failed_total"))
	}
}

func grepLines(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
