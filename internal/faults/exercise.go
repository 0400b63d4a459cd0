package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/imgflow/imgflow/internal/asynqext"
)

// outcome is what the client saw for one Idempotency-Key.
type outcome struct {
	key   string
	ids   map[string]bool // job ids answered for the key (more than one breaks idempotency)
	tries int
}

type client struct {
	s        *system
	image    []byte // a PNG; each key sends it made distinct (distinctPNG)
	small    []byte // a smaller PNG, for batch items
	mu       sync.Mutex
	statuses map[int]int // every answer's status (0: no answer)
	bad      []string    // answers no user may see
}

func (c *client) post(key string) (string, int) {
	body, _ := json.Marshal(map[string]string{"image_base64": base64.StdEncoding.EncodeToString(distinctPNG(c.image, key))})
	return c.postKeyed("/v1/jobs", "key", key, body)
}

// postKeyed POSTs a JSON body under an Idempotency-Key and returns the id
// the answer names and its status (0: no answer); an answer no user may see
// (a 5xx but 503, a 4xx but 409) is recorded as bad, named by what and key.
func (c *client) postKeyed(path, what, key string, body []byte) (string, int) {
	req, _ := http.NewRequest(http.MethodPost, c.s.api+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", c.s.key)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	status := 0
	var answer struct {
		ID string `json:"id"`
	}
	if err == nil {
		status = resp.StatusCode
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		json.Unmarshal(data, &answer)
		if status >= 500 && status != http.StatusServiceUnavailable || status >= 400 && status < 500 && status != http.StatusConflict {
			c.mu.Lock()
			c.bad = append(c.bad, fmt.Sprintf("%s %s: %d %.300s", what, key, status, bytes.TrimSpace(data)))
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	c.statuses[status]++
	c.mu.Unlock()
	return answer.ID, status
}

// submit sends one job with its Idempotency-Key, retrying with the same
// key as a flow would (no answer, 503, 409) until it is accepted; every
// tenth job is sent once more after its acceptance, as a flow whose answer
// was lost would.
func (c *client) submit(ctx context.Context, key string, again bool) *outcome {
	o := &outcome{key: key, ids: map[string]bool{}}
	for ctx.Err() == nil {
		o.tries++
		id, status := c.post(key)
		if status == http.StatusAccepted || status == http.StatusOK {
			o.ids[id] = true
			if !again {
				return o
			}
			again = false
			continue
		}
		if status != 0 && status != http.StatusServiceUnavailable && status != http.StatusConflict {
			return o // a refusal: reported by post
		}
		time.Sleep(300 * time.Millisecond)
	}
	return o
}

// recovery is how long the tasks active at a fault stayed active.
type recovery struct {
	fault string
	at    time.Time
	took  time.Duration
	tasks int
}

// activeTasks are the ids of the compress jobs running: asynq's active
// tasks, and fair dispatch's (the default) leased jobs, whose lease
// members are "owner\nid[|retries]\ntoken" (worker/dispatch.go).
func (s *system) activeTasks(ctx context.Context) []string {
	ids, _ := s.rdb.LRange(ctx, asynqext.QueueOf("imgflow").Active(), 0, -1).Result()
	leased, _ := s.rdb.ZRange(ctx, "imgflow:fair:{imgflow}:leases", 0, -1).Result()
	for _, m := range leased {
		if parts := strings.Split(m, "\n"); len(parts) == 3 {
			id, _, _ := strings.Cut(parts[1], "|")
			ids = append(ids, id)
		}
	}
	return ids
}

// watchRecovery measures, in the background, how long the tasks in ids
// stay active.
func (s *system) watchRecovery(ctx context.Context, fault string, ids []string, wg *sync.WaitGroup, out chan<- recovery) {
	at := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			still := map[string]bool{}
			for _, id := range s.activeTasks(ctx) {
				still[id] = true
			}
			left := 0
			for _, id := range ids {
				if still[id] {
					left++
				}
			}
			if left == 0 && s.rdb.Ping(ctx).Err() == nil {
				out <- recovery{fault: fault, at: at, took: time.Since(at), tasks: len(ids)}
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
}

func (s *system) exercise(ctx context.Context, p profile) (bool, error) {
	img, err := os.ReadFile("fixtures/images/photo.png")
	if err != nil {
		return false, err
	}
	small, err := os.ReadFile("fixtures/images/screenshot.png")
	if err != nil {
		return false, err
	}
	c := &client{s: s, image: img, small: small, statuses: map[int]int{}}
	recv, err := startReceiver()
	if err != nil {
		return false, err
	}
	defer recv.close()
	var batchMu sync.Mutex
	var batches []*batchOutcome
	var batchClients sync.WaitGroup
	sendBatch := func(ctx context.Context, key string, set bool) {
		batchClients.Add(1)
		go func() {
			defer batchClients.Done()
			o := c.submitBatch(ctx, key, recv.url, set)
			batchMu.Lock()
			batches = append(batches, o)
			batchMu.Unlock()
		}()
	}

	// Faults, spread over the sending time.
	sendFor := time.Duration(float64(p.jobs) / p.rate * float64(time.Second))
	type fault struct {
		name string
		do   func() error
	}
	var faults []fault
	var upgrades []replaced
	for i := range max(p.workerKills, p.redisRests, p.redisCrash, p.serveKills, p.upgrades) {
		if i < p.upgrades {
			faults = append(faults, fault{"rolling upgrade (SIGTERM, one process at a time)", func() error {
				r, err := s.rollingUpgrade(ctx)
				upgrades = append(upgrades, r...)
				return err
			}})
		}
		if i < p.workerKills {
			w := s.workers[i%len(s.workers)]
			faults = append(faults, fault{"SIGKILL " + w.name + " mid-call", func() error {
				if job := s.killWhenBusy(ctx, w); job != "" {
					fmt.Printf("faults: %s killed with an upstream call in flight for job %s\n", w.name, job)
				} else {
					fmt.Printf("faults: %s was not calling the upstream within 20 s; killed anyway\n", w.name)
				}
				time.Sleep(time.Second)
				return w.start()
			}})
		}
		if i < p.redisRests {
			faults = append(faults, fault{fmt.Sprintf("Redis restart (SIGTERM, down %s)", p.redisDown), func() error {
				return s.restartRedis(ctx, syscall.SIGTERM, p.redisDown)
			}})
		}
		if i < p.redisCrash {
			faults = append(faults, fault{fmt.Sprintf("Redis crash (SIGKILL, down %s)", p.redisDown), func() error {
				return s.restartRedis(ctx, syscall.SIGKILL, p.redisDown)
			}})
		}
		if i < p.serveKills {
			faults = append(faults, fault{"SIGKILL serve mid-batch", func() error {
				// A 200-item batch is being stored when serve dies; its
				// client retries with the same Idempotency-Key.
				sendBatch(ctx, fmt.Sprintf("faults-batch-killed-%d", i), false)
				if s.waitBatchMaking(ctx, 5*time.Second) {
					fmt.Println("faults: serve killed while a batch was being made (its items stored, hidden)")
				} else {
					fmt.Println("faults: no batch was seen being made within 5 s; serve killed anyway")
				}
				s.serve.kill()
				return s.serve.start()
			}})
		}
	}
	recoveries := make(chan recovery, len(faults))
	var watchers sync.WaitGroup
	faultsDone := make(chan error, 1)
	go func() {
		gap := sendFor / time.Duration(len(faults)+1)
		for _, f := range faults {
			time.Sleep(gap)
			active := s.activeTasks(ctx)
			fmt.Printf("faults: %s: %s (%d tasks active)\n", time.Now().Format("15:04:05.000"), f.name, len(active))
			if err := f.do(); err != nil {
				faultsDone <- fmt.Errorf("%s: %w", f.name, err)
				return
			}
			if f.name != "SIGKILL serve mid-batch" { // serve runs no tasks
				s.watchRecovery(ctx, f.name, active, &watchers, recoveries)
			}
		}
		faultsDone <- nil
	}()

	// The load: one job every 1/rate seconds, each with its own key.
	sendCtx, stopSending := context.WithTimeout(ctx, sendFor+3*time.Minute)
	defer stopSending()
	outcomes := make([]*outcome, p.jobs)
	var clients sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / p.rate))
	batchEvery := p.jobs / (p.batches + 1)
	setEvery := p.jobs / (p.sets + 1)
	for i := range p.jobs {
		<-tick.C
		if n := i / max(batchEvery, 1); i%max(batchEvery, 1) == 0 && i > 0 && n <= p.batches {
			sendBatch(sendCtx, fmt.Sprintf("faults-batch-%d", n), false)
		}
		if n := i / max(setEvery, 1); i%max(setEvery, 1) == 0 && i > 0 && n <= p.sets {
			sendBatch(sendCtx, fmt.Sprintf("faults-set-%d", n), true)
		}
		clients.Add(1)
		go func() {
			defer clients.Done()
			outcomes[i] = c.submit(sendCtx, fmt.Sprintf("faults-%d", i), i%10 == 0)
		}()
	}
	tick.Stop()
	clients.Wait()
	if err := <-faultsDone; err != nil {
		return false, err
	}
	batchClients.Wait()
	sent := time.Now()

	ok := true
	fail := func(format string, args ...any) {
		ok = false
		fmt.Printf("faults: VIOLATION: "+format+"\n", args...)
	}
	var ids []string
	for _, o := range outcomes {
		switch len(o.ids) {
		case 0:
			fail("key %s never accepted after %d tries", o.key, o.tries)
		case 1:
			for id := range o.ids {
				ids = append(ids, id)
			}
		default:
			fail("key %s got %d different jobs", o.key, len(o.ids))
		}
	}
	for _, b := range c.bad {
		fail("a client saw %s", b)
	}

	// Every accepted job ends: one that is gone is lost, one that is not
	// finished 4 min after the load is stuck.
	jobs := map[string]*jobView{}
	deadline := time.Now().Add(4 * time.Minute)
	for _, id := range ids {
		for {
			j := s.getJob(id)
			if j != nil && (j.Status == "completed" || j.Status == "failed") {
				jobs[id] = j
				break
			}
			if time.Now().After(deadline) {
				if j == nil {
					fail("job %s lost: accepted, and not found 4 min after the load", id)
				} else {
					fail("job %s stuck: %s 4 min after the load", id, j.Status)
					jobs[id] = j
				}
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	s.checkBatches(batches, recv, fail)
	drained := time.Since(sent)
	watchers.Wait()
	close(recoveries)

	v, err := s.verdict(ctx, p, jobs, c)
	if err != nil {
		return false, err
	}
	for _, msg := range v.violations {
		fail("%s", msg)
	}
	for _, r := range upgrades {
		if r.killed {
			fail("rolling upgrade: %s did not exit within %s of SIGTERM and was killed", r.name, termGrace)
		}
	}
	if p.upgrades > 0 && len(upgrades) != 1+len(s.workers) {
		fail("rolling upgrade: %d of %d processes replaced", len(upgrades), 1+len(s.workers))
	}
	for r := range recoveries {
		fmt.Printf("faults: recovery: %s at %s: its %d active task(s) left \"active\" within %s\n",
			r.fault, r.at.Format("15:04:05"), r.tasks, r.took.Round(100*time.Millisecond))
	}
	fmt.Printf("faults: all jobs finished %s after the last was sent\n", drained.Round(100*time.Millisecond))
	return ok, nil
}

// jobView is what the suite reads of a job.
type jobView struct {
	ID              string `json:"id"`
	Status          string `json:"status"`
	ChargeUncertain bool   `json:"charge_uncertain"`
	BatchID         string `json:"batch_id"` // an item of a batch (its client was given the batch)
	UpstreamCalls   int    `json:"upstream_calls"`
	// DeduplicatedFrom names the job whose result a repeat took.
	DeduplicatedFrom string `json:"deduplicated_from"`
	Error            *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (s *system) getJob(id string) *jobView {
	var j jobView
	if status, err := s.get("/v1/jobs/"+id, &j); err != nil || status != http.StatusOK {
		return nil
	}
	return &j
}

// get reads GET path with the suite's key, decoding the body into v
// whatever the status.
func (s *system) get(path string, v any) (status int, err error) {
	req, _ := http.NewRequest(http.MethodGet, s.api+path, nil)
	req.Header.Set("X-API-Key", s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
}

// distinctPNG is png with a tEXt chunk naming key after its header: the
// same picture in other bytes, so that each job is a new image to content
// dedupe and is charged, as the suite counts.
func distinctPNG(png []byte, key string) []byte {
	const afterIHDR = 8 + 25 // signature, then IHDR: length, type, 13 bytes, CRC
	data := append([]byte("Comment\x00"), key...)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := append([]byte(nil), png[:afterIHDR]...)
	out = append(out, chunk...)
	return append(out, png[afterIHDR:]...)
}
