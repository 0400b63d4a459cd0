package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
)

// Attribution: every credit the upstream's ledger spent (its charge
// records, one per credit, written with the spend) is reconciled with a
// job of the run. A charge is the job's own when it is the first charge of
// a job that completed from its own call; any other is extra, and the
// report names it whole: the job and its state, the request that charged,
// what that request answered, which worker's run saw the charged answer
// (or that none did), and every call the workers logged for the job.

// upstreamRequest is what the upstream's log tells of one request.
type upstreamRequest struct {
	status   string // the answer's status ("0": none written)
	gone     bool   // the client had gone when it ended
	done     bool   // it logged a charged answer
	replayed bool   // it answered a kept answer
	failure  string // an error it logged (charge failed, client went away...)
}

// workerCall is one upstream call a worker logged for a job.
type workerCall struct {
	worker      string
	incarnation int
	run, call   string
	answer      string // the upstream job id of the 200 it got ("" none logged)
	outcome     string // the worker's next line for the job after the call
}

var (
	requestIDAttr     = regexp.MustCompile(`\brequest_id=(\S+)`)
	statusAttr        = regexp.MustCompile(`\bstatus=(\S+)`)
	goneAttr          = regexp.MustCompile(`\bgone=(\S+)`)
	msgAttr           = regexp.MustCompile(`\bmsg=("(?:[^"\\]|\\.)*"|\S+)`)
	runAttr           = regexp.MustCompile(`\brun=(\S+)`)
	callAttr          = regexp.MustCompile(`\bcall=(\S+)`)
	upstreamJobIDAttr = regexp.MustCompile(`\bupstream_job_id=(\S+)`)
)

func attr(re *regexp.Regexp, line string) string {
	if m := re.FindStringSubmatch(line); m != nil {
		return strings.Trim(m[1], `"`)
	}
	return ""
}

// upstreamRequests reads the upstream's log by request id.
func upstreamRequests(path string) (map[string]*upstreamRequest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]*upstreamRequest{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		id := attr(requestIDAttr, line)
		if id == "" {
			continue
		}
		r := out[id]
		if r == nil {
			r = &upstreamRequest{}
			out[id] = r
		}
		switch msg := attr(msgAttr, line); {
		case msg == "upstream request":
			r.status, r.gone = attr(statusAttr, line), attr(goneAttr, line) == "true"
		case msg == "upstream compress: done":
			r.done = true
		case msg == "upstream compress: replayed":
			r.replayed = true
		case strings.Contains(line, "level=ERROR") || strings.Contains(line, "went away"):
			r.failure = msg
		}
	}
	return out, sc.Err()
}

// workerCalls reads every upstream call the workers logged, by job.
func (s *system) workerCalls() (map[string][]*workerCall, error) {
	out := map[string][]*workerCall{}
	for _, w := range s.workers {
		data, err := os.ReadFile(w.path)
		if err != nil {
			return nil, err
		}
		open := map[string]*workerCall{} // the job's call awaiting its next line
		pos := int64(0)
		for _, line := range strings.SplitAfter(string(data), "\n") {
			inc := sort.Search(len(w.kills), func(i int) bool { return w.kills[i] > pos })
			pos += int64(len(line))
			id := attr(jobIDAttr, line)
			if id == "" {
				continue
			}
			msg := attr(msgAttr, line)
			if c := open[id]; c != nil && c.incarnation != inc {
				c.outcome = "none: the worker was killed"
				delete(open, id)
			}
			switch {
			case msg == "compressing":
				c := &workerCall{worker: w.name, incarnation: inc, run: attr(runAttr, line), call: attr(callAttr, line)}
				out[id] = append(out[id], c)
				open[id] = c
			case msg == "compressed":
				if c := open[id]; c != nil {
					c.answer = attr(upstreamJobIDAttr, line)
				}
			default:
				if c := open[id]; c != nil {
					c.outcome = msg
					delete(open, id)
				}
			}
		}
		for _, c := range open {
			if c.incarnation < len(w.kills) {
				c.outcome = "none: the worker was killed"
			} else {
				c.outcome = "none logged"
			}
		}
	}
	return out, nil
}

// attribution is every charge of the run, reconciled with the jobs.
type attribution struct {
	perJob map[string]int // charges per Idempotency-Key (job id)
	extra  []string       // each extra charge, described
	// extraOnUncertain and extraElsewhere count extra charges on jobs
	// marked charge_uncertain and on any other (or none).
	extraOnUncertain, extraElsewhere int
}

// attribute reconciles charges with the run's jobs (all) from the
// upstream's and the workers' logs.
func (s *system) attribute(charges []refupstream.ChargeRecord, all map[string]*jobView) (*attribution, error) {
	reqs, err := upstreamRequests(s.upstream.path)
	if err != nil {
		return nil, err
	}
	calls, err := s.workerCalls()
	if err != nil {
		return nil, err
	}
	a := &attribution{perJob: map[string]int{}}
	for i, c := range charges {
		a.perJob[c.IdempotencyKey]++
		j := all[c.IdempotencyKey]
		own := c.IdempotencyKey != "" && j != nil && j.Status == "completed" && j.DeduplicatedFrom == "" && a.perJob[c.IdempotencyKey] == 1
		if own {
			continue
		}
		why := "a charge of a job no client was given and no listing holds"
		switch {
		case c.IdempotencyKey == "":
			why = "a charge without an Idempotency-Key"
		case j == nil:
		case j.Status != "completed":
			why = "a charge of a job that ended " + j.Status
		case j.DeduplicatedFrom != "":
			why = "a charge of a repeat completed from " + j.DeduplicatedFrom + "'s result"
		default:
			why = fmt.Sprintf("charge %d of one job", a.perJob[c.IdempotencyKey])
		}
		if j != nil && j.ChargeUncertain {
			a.extraOnUncertain++
		} else {
			a.extraElsewhere++
		}
		a.extra = append(a.extra, fmt.Sprintf("charge #%d at %s: %s; %s; %s",
			i+1, c.At.Format("15:04:05.000"), why, describeJob(c.IdempotencyKey, j), describeCharge(c, reqs, calls[c.IdempotencyKey], charges)))
	}
	return a, nil
}

func describeJob(id string, j *jobView) string {
	if j == nil {
		return "job " + id + " (not in the key's listing)"
	}
	return fmt.Sprintf("job %s %s (charge_uncertain %v, upstream_calls %d)", id, j.Status, j.ChargeUncertain, j.UpstreamCalls)
}

// describeCharge says what the charging request answered, which worker
// call saw its answer, and lists the job's other charges and calls.
func describeCharge(c refupstream.ChargeRecord, reqs map[string]*upstreamRequest, calls []*workerCall, charges []refupstream.ChargeRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "request %s (key honoured %v, upstream job %s) ", c.RequestID, c.KeyHonoured, c.JobID)
	switch r := reqs[c.RequestID]; {
	case r == nil:
		b.WriteString("left no line in the upstream's log (killed?)")
	default:
		fmt.Fprintf(&b, "answered status %s (charged answer logged %v, replay %v, client gone %v", r.status, r.done, r.replayed, r.gone)
		if r.failure != "" {
			fmt.Fprintf(&b, ", then %q", r.failure)
		}
		b.WriteString(")")
	}
	seen := "; no worker call logged its answer"
	for _, wc := range calls {
		if wc.answer == c.JobID {
			seen = fmt.Sprintf("; its answer reached %s#%d run %s call %s", wc.worker, wc.incarnation, wc.run, wc.call)
		}
	}
	b.WriteString(seen)
	var others []string
	for _, o := range charges {
		if o.IdempotencyKey == c.IdempotencyKey && o.RequestID != c.RequestID {
			others = append(others, fmt.Sprintf("%s at %s (upstream job %s)", o.RequestID, o.At.Format("15:04:05.000"), o.JobID))
		}
	}
	fmt.Fprintf(&b, "; the job's other charges %v; its calls:", others)
	for _, wc := range calls {
		fmt.Fprintf(&b, " [%s#%d run %s call %s: answer %q, then %q]", wc.worker, wc.incarnation, wc.run, wc.call, wc.answer, wc.outcome)
	}
	return b.String()
}
