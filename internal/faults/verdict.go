package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The verdict: every job of the key finished, and the credits the upstream
// charged equal the jobs that completed, each extra charge traced to its
// job and its cause from the processes' logs.

// maxConflicts is how many 409 answers a run may see (Idempotency-Key
// retries that met their first request still in flight).
const maxConflicts = 40

// Causes of an extra charge.
const (
	causeKilled = "killed mid-call" // a worker SIGKILLed with the job's call in flight
	causeDouble = "double run"      // calls from two runs of the job, none killed
	causeOther  = "other"
	causeStray  = "a job no client was given" // made by a request that answered an error
)

type verdict struct {
	violations []string
}

func (v *verdict) fail(format string, args ...any) {
	v.violations = append(v.violations, fmt.Sprintf(format, args...))
}

// verdict judges the run: accepted are the jobs the clients were given.
func (s *system) verdict(ctx context.Context, p profile, accepted map[string]*jobView, c *client) (*verdict, error) {
	v := &verdict{}
	all, err := s.settledJobs(ctx, 90*time.Second)
	if err != nil {
		return nil, err
	}
	for id, j := range accepted {
		if _, ok := all[id]; !ok {
			v.fail("job %s was accepted but is not in the key's listing (GET /v1/jobs): a polling trigger never sees it", id)
			all[id] = j
		}
	}
	completed, repeats, failed := 0, 0, map[string]int{}
	var uncertain []string
	for id, j := range all {
		switch {
		case j.Status == "completed" && j.DeduplicatedFrom != "":
			repeats++ // completed from an earlier job's result, free
		case j.Status == "completed":
			completed++
		case j.Status == "failed":
			failed[j.Error.Code]++
		default:
			if _, ok := accepted[id]; ok {
				continue // reported as stuck already
			}
			v.fail("orphan record: job %s is %s and no client was given it", id, j.Status)
		}
		if j.ChargeUncertain {
			uncertain = append(uncertain, id)
		}
	}
	sort.Strings(uncertain)
	acct, err := s.ledger.Lookup(ctx, s.key)
	if err != nil {
		return nil, err
	}
	charged := int(s.credits - acct.CreditsRemaining)
	fmt.Printf("faults: %d jobs of the key (%d accepted), %d completed (and %d repeats completed free), failed by code %v; answers by status %v\n",
		len(all), len(accepted), completed, repeats, failed, c.statuses)
	fmt.Printf("faults: upstream charged %d credits for %d completed jobs; %d job(s) charge_uncertain %v\n",
		charged, completed, len(uncertain), uncertain)

	perJob, err := chargesPerJob(s.upstream.path)
	if err != nil {
		return nil, err
	}
	logged := 0
	for _, n := range perJob {
		logged += n
	}
	if logged != charged {
		fmt.Printf("faults: note: the upstream's log shows %d charges, its ledger %d\n", logged, charged)
	}
	calls, err := s.callsPerJob()
	if err != nil {
		return nil, err
	}
	byCause := map[string][]string{}
	extraOnUncertain, extraElsewhere := 0, 0
	for id, n := range perJob {
		j := all[id]
		want := 0
		if j != nil && j.Status == "completed" && j.DeduplicatedFrom == "" {
			want = 1 // a repeat (content dedupe) is free
		}
		extra := n - want
		if extra <= 0 {
			continue
		}
		cause := calls.cause(id)
		if j == nil {
			cause = causeStray
		}
		byCause[cause] = append(byCause[cause], fmt.Sprintf("%s(+%d)", id, extra))
		if j != nil && j.ChargeUncertain {
			extraOnUncertain += extra
		} else {
			extraElsewhere += extra
		}
	}
	for id, j := range all {
		if j.Status == "completed" && j.DeduplicatedFrom == "" && perJob[id] == 0 && logged == charged {
			v.fail("job %s completed without a charge in the upstream's log", id)
		}
	}
	for _, cause := range []string{causeDouble, causeKilled, causeStray, causeOther} {
		if ids := byCause[cause]; len(ids) > 0 {
			sort.Strings(ids)
			fmt.Printf("faults: extra charges, %s: %d job(s) %v\n", cause, len(ids), ids)
		}
	}
	extra := charged - completed
	switch {
	case extra < 0:
		v.fail("the upstream charged %d for %d completed jobs: a completed job was never charged", charged, completed)
	case extra > 0 && p.idempotency:
		v.fail("%d extra charge(s) with an upstream that honours Idempotency-Key (by cause above)", extra)
	case extra > 0 && extraElsewhere > 0:
		v.fail("%d extra charge(s), %d of them on jobs not marked charge_uncertain", extra, extraElsewhere)
	case extra > 0:
		fmt.Printf("faults: uncertain class: %d extra charge(s), each on a job marked charge_uncertain (the upstream ignores Idempotency-Key)\n", extraOnUncertain)
	default:
		fmt.Printf("faults: charged exactly once: %d credits for %d completed jobs\n", charged, completed)
	}
	if n := c.statuses[http.StatusConflict]; n > maxConflicts {
		v.fail("%d answers 409 (at most %d)", n, maxConflicts)
	}
	return v, nil
}

// settledJobs lists every job of the key, waiting up to wait for the
// unfinished ones (an unqueued job is queued by the worker's sweeper).
func (s *system) settledJobs(ctx context.Context, wait time.Duration) (map[string]*jobView, error) {
	deadline := time.Now().Add(wait)
	for {
		all, err := s.listJobs()
		if err != nil {
			return nil, err
		}
		open := 0
		for _, j := range all {
			if j.Status != "completed" && j.Status != "failed" {
				open++
			}
		}
		if open == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return all, nil
		}
		time.Sleep(time.Second)
	}
}

// listJobs reads every page of GET /v1/jobs.
func (s *system) listJobs() (map[string]*jobView, error) {
	all := map[string]*jobView{}
	cursor := ""
	for {
		req, _ := http.NewRequest(http.MethodGet, s.api+"/v1/jobs?limit=100&cursor="+cursor, nil)
		req.Header.Set("X-API-Key", s.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("listing jobs: %w", err)
		}
		var page struct {
			Jobs       []*jobView `json:"jobs"`
			NextCursor string     `json:"next_cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("listing jobs: %d %v", resp.StatusCode, err)
		}
		for _, j := range page.Jobs {
			all[j.ID] = j
		}
		if page.NextCursor == "" {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

var (
	idempotencyKeyAttr = regexp.MustCompile(`\bidempotency_key=(\S+)`)
	jobIDAttr          = regexp.MustCompile(`\bjob_id=(\S+)`)
)

// chargesPerJob counts the upstream's charged answers per Idempotency-Key
// (the job id) in its log.
func chargesPerJob(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="upstream compress: done"`) {
			continue
		}
		if m := idempotencyKeyAttr.FindStringSubmatch(line); m != nil {
			n[m[1]]++
		}
	}
	return n, sc.Err()
}

// call is one upstream call's start in a worker's log.
type call struct {
	worker      string
	incarnation int  // which run of the worker process (kills end one)
	killed      bool // its incarnation was killed before it logged the job again
}

// calls are the upstream calls of each job, read from the workers' logs.
type calls map[string][]call

func (s *system) callsPerJob() (calls, error) {
	out := calls{}
	for _, w := range s.workers {
		data, err := os.ReadFile(w.path)
		if err != nil {
			return nil, err
		}
		// last[job] is the call whose incarnation may end with it.
		type open struct {
			index int
			inc   int
		}
		last := map[string]open{}
		pos := int64(0)
		for _, line := range strings.SplitAfter(string(data), "\n") {
			inc := sort.Search(len(w.kills), func(i int) bool { return w.kills[i] > pos })
			pos += int64(len(line))
			m := jobIDAttr.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			id := m[1]
			if strings.Contains(line, "msg=compressing") {
				out[id] = append(out[id], call{worker: w.name, incarnation: inc})
				last[id] = open{index: len(out[id]) - 1, inc: inc}
				continue
			}
			delete(last, id) // the call was answered (or the job logged on)
		}
		for id, o := range last {
			if o.inc < len(w.kills) { // its incarnation ended with a kill
				out[id][o.index].killed = true
			}
		}
	}
	return out, nil
}

// cause names why job id was charged more than once.
func (c calls) cause(id string) string {
	runs := map[string]bool{}
	for _, k := range c[id] {
		if k.killed {
			return causeKilled
		}
		runs[fmt.Sprintf("%s/%d", k.worker, k.incarnation)] = true
	}
	if len(runs) > 1 || len(c[id]) > 1 {
		return causeDouble
	}
	return causeOther
}
