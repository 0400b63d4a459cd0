package main

import (
	"bufio"
	"context"
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
// job and its cause (attribution.go).

// maxConflicts is how many 409 answers a run may see (Idempotency-Key
// retries that met their first request still in flight).
const maxConflicts = 40

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
	completed, completedOrphans, repeats, failed := 0, 0, 0, map[string]int{}
	var uncertain []string
	for id, j := range all {
		switch {
		case j.Status == "completed" && j.DeduplicatedFrom != "":
			repeats++ // completed from an earlier job's result, free
		case j.Status == "completed":
			completed++
			if _, ok := accepted[id]; !ok && j.BatchID == "" {
				completedOrphans++ // a job no client was given, run: its charge is due
			}
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
	fmt.Printf("faults: upstream charged %d credits for %d completed jobs (%d of them completed orphans); %d job(s) charge_uncertain %v\n",
		charged, completed, completedOrphans, len(uncertain), uncertain)

	// Every credit spent, reconciled with a job (attribution.go).
	charges, err := s.ledger.Charges(ctx, s.key)
	if err != nil {
		return nil, err
	}
	if len(charges) != charged {
		v.fail("the upstream's ledger spent %d credits but holds %d charge records", charged, len(charges))
	}
	logged, err := chargesLogged(s.upstream.path)
	if err != nil {
		return nil, err
	}
	a, err := s.attribute(charges, all)
	if err != nil {
		return nil, err
	}
	fmt.Printf("faults: attribution: %d charge records, %d charged answers in the upstream's log, %d extra charge(s): %d on jobs marked charge_uncertain, %d elsewhere\n",
		len(charges), logged, len(a.extra), a.extraOnUncertain, a.extraElsewhere)
	for _, e := range a.extra {
		fmt.Printf("faults: extra charge: %s\n", e)
	}
	for id, j := range all {
		if j.Status == "completed" && j.DeduplicatedFrom == "" && a.perJob[id] == 0 {
			v.fail("job %s completed without a charge in the upstream's ledger", id)
		}
	}
	extraOnUncertain, extraElsewhere := a.extraOnUncertain, a.extraElsewhere
	// Extra charges: beyond the completed jobs, or any charge that is not
	// a completed job's own (one job charged twice while another was
	// never charged is two faults, not none).
	extra := charged - completed
	if extra >= 0 {
		extra = max(extra, len(a.extra))
	}
	if p.upgrades > 0 && len(uncertain) > 0 {
		v.fail("%d job(s) charge_uncertain after a rolling upgrade without crashes: a SIGTERM left a call unanswered", len(uncertain))
	}
	switch {
	case extra < 0:
		v.fail("the upstream charged %d for %d completed jobs: a completed job was never charged", charged, completed)
	case extra > 0 && p.idempotency:
		v.fail("%d extra charge(s) with an upstream that honours Idempotency-Key (each attributed above)", extra)
	case extra > 0 && p.upgrades > 0:
		v.fail("%d extra charge(s) after a rolling upgrade without crashes (each attributed above)", extra)
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
		var page struct {
			Jobs       []*jobView `json:"jobs"`
			NextCursor string     `json:"next_cursor"`
		}
		if status, err := s.get("/v1/jobs?limit=100&cursor="+cursor, &page); err != nil || status != http.StatusOK {
			return nil, fmt.Errorf("listing jobs: %d %v", status, err)
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

var jobIDAttr = regexp.MustCompile(`\bjob_id=(\S+)`)

// chargesLogged counts the charged answers in the upstream's log.
func chargesLogged(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `msg="upstream compress: done"`) {
			n++
		}
	}
	return n, sc.Err()
}
