package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/asynqext"
)

// Task types on the queue.
const (
	TypeCompress = "job:compress"
	TypeDelivery = "delivery"
)

// Defaults shared by Queue and Config.
const (
	DefaultQueue              = "imgflow"
	DefaultMaxCompressRetries = 8
	// DefaultRetention keeps finished tasks (a few hundred bytes each: ids
	// only) so that enqueuing the same job or delivery again within it is a
	// no-op.
	DefaultRetention = time.Hour

	compressTimeout = 2 * time.Minute // one upstream call plus the fetch
	deliveryTimeout = time.Minute     // one webhook POST
)

// DefaultDeliverySchedule is the Standard Webhooks retry schedule: the delay
// before each attempt, the first one immediate. Ten attempts over about 3
// days.
var DefaultDeliverySchedule = []time.Duration{
	0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// DeliveryQueue is the asynq queue of queue's deliveries (callbacks, hook
// events, redeliveries): apart from compress tasks and served by a pool of
// its own (Config.DeliveryConcurrency), so that however many deliveries
// wait, and however slow their receivers, no compress task waits behind
// them, nor a delivery behind a slow fetch.
func DeliveryQueue(queue string) string {
	if queue == "" {
		queue = DefaultQueue
	}
	return queue + "-deliveries"
}

// compressPayload is the whole payload of a compress task.
type compressPayload struct {
	JobID string `json:"job_id"`
	Owner string `json:"owner,omitempty"` // the key's owner id (never the key)
}

// Queue enqueues imgflow's tasks with asynq. It implements connector.Queue.
type Queue struct {
	client             *asynq.Client
	wake               redis.UniversalClient // nil: no wake-ups
	wakeHook           *enqueueWaker         // on wake: sends an enqueue's wake-up with it
	asynqQueue         asynqext.Queue        // asynq's keys of queue (made once)
	asynqDeliveries    asynqext.Queue        // and of deliveries
	wakes              *wakeUps              // of the compress queue
	deliveryWakes      *wakeUps              // of the delivery queue
	queue              string
	deliveries         string // DeliveryQueue(queue)
	maxCompressRetries int
	schedule           []time.Duration
	retention          time.Duration
	// fair, when set, takes compress jobs instead of asynq (dispatch.go).
	fair *fairQueue
}

var _ connector.Queue = (*Queue)(nil)

// QueueOption changes a Queue's defaults.
type QueueOption func(*Queue)

// WithMaxCompressRetries sets how many times a compress task is retried
// after its first attempt (default DefaultMaxCompressRetries).
func WithMaxCompressRetries(n int) QueueOption {
	return func(q *Queue) { q.maxCompressRetries = n }
}

// WithDeliverySchedule sets the delay before each delivery attempt (default
// DefaultDeliverySchedule): len(s) attempts, the first after s[0]. The
// worker's RetryDelayFunc must use the same schedule (Worker does).
func WithDeliverySchedule(s []time.Duration) QueueOption {
	return func(q *Queue) { q.schedule = s }
}

// WithRetention sets how long a finished task is kept so that a duplicate
// enqueue stays a no-op (default DefaultRetention).
func WithRetention(d time.Duration) QueueOption {
	return func(q *Queue) { q.retention = d }
}

// WithWakeUps makes the Queue publish a wake-up on rdb after every task it
// enqueues for now, so an idle worker starts it at once rather than at its
// next poll (see wake.go). The publish does not delay the enqueue.
func WithWakeUps(rdb redis.UniversalClient) QueueOption {
	return func(q *Queue) { q.wake = rdb }
}

// NewQueue returns a Queue that puts tasks on the named asynq queue
// ("" means DefaultQueue). The caller owns client and closes it.
func NewQueue(client *asynq.Client, queue string, opts ...QueueOption) *Queue {
	q := &Queue{
		client:             client,
		wakes:              &wakeUps{},
		deliveryWakes:      &wakeUps{},
		queue:              queue,
		maxCompressRetries: DefaultMaxCompressRetries,
		schedule:           DefaultDeliverySchedule,
		retention:          DefaultRetention,
	}
	if q.queue == "" {
		q.queue = DefaultQueue
	}
	q.deliveries = DeliveryQueue(q.queue)
	q.asynqQueue, q.asynqDeliveries = asynqext.QueueOf(q.queue), asynqext.QueueOf(q.deliveries)
	for _, o := range opts {
		o(q)
	}
	if q.wake != nil {
		q.wakeHook = &enqueueWaker{rdb: q.wake}
		q.wake.AddHook(q.wakeHook)
	}
	if len(q.schedule) == 0 {
		q.schedule = DefaultDeliverySchedule
	}
	return q
}

// EnqueueCompress queues the compression of a job of owner. The task id is
// the job id, so enqueuing the same job again (while the task is queued,
// running, retrying or retained) is a no-op. The owner rides in the
// payload so that the worker places the task in its key's share without
// reading the job ("" when unknown: it reads it then).
func (q *Queue) EnqueueCompress(ctx context.Context, jobID, owner string) error {
	if q.fair != nil {
		return q.fair.enqueue(ctx, jobID, owner)
	}
	payload, err := json.Marshal(compressPayload{JobID: jobID, Owner: owner})
	if err != nil {
		return err
	}
	ectx, slot := q.wakeWithEnqueue(ctx, q.queue)
	err = q.enqueue(ectx, asynq.NewTask(TypeCompress, payload),
		asynq.TaskID(jobID),
		asynq.Queue(q.queue),
		asynq.MaxRetry(q.maxCompressRetries),
		asynq.Timeout(compressTimeout),
		asynq.Retention(q.retention),
	)
	if err == nil && (slot == nil || !slot.sent) {
		q.wakeWorkers(ctx, q.queue)
	}
	return err
}

// wakeWithEnqueue marks ctx so that the enqueue on queue carries its
// wake-up (wakehook.go); nil without wake-ups.
func (q *Queue) wakeWithEnqueue(ctx context.Context, queue string) (context.Context, *wakeSlot) {
	if q.wake == nil {
		return ctx, nil
	}
	keys := q.asynqQueue
	if queue == q.deliveries {
		keys = q.asynqDeliveries
	}
	return withWakeUp(ctx, q.wakeHook, keys, wakeChannel(queue))
}

// EnqueueDelivery queues one delivery; d.ID is the task id, so a delivery
// is queued at most once. A redelivery is one attempt under its own task
// id, kept only while queued or running: a second one asked for meanwhile
// is the same, and a later one goes through.
func (q *Queue) EnqueueDelivery(ctx context.Context, d connector.Delivery) error {
	payload, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if d.Redeliver {
		ectx, slot := q.wakeWithEnqueue(ctx, q.deliveries)
		err := q.enqueue(ectx, asynq.NewTask(TypeDelivery, payload),
			asynq.TaskID(d.ID+":redeliver"),
			asynq.Queue(q.deliveries),
			asynq.MaxRetry(0),
			asynq.Timeout(deliveryTimeout),
		)
		if err == nil && (slot == nil || !slot.sent) {
			q.wakeWorkers(ctx, q.deliveries)
		}
		return err
	}
	opts := []asynq.Option{
		asynq.TaskID(d.ID),
		asynq.Queue(q.deliveries),
		asynq.MaxRetry(len(q.schedule) - 1), // attempts = len(schedule)
		asynq.Timeout(deliveryTimeout),
		asynq.Retention(q.retention),
	}
	if q.schedule[0] > 0 {
		opts = append(opts, asynq.ProcessIn(q.schedule[0]))
	}
	err = q.enqueue(ctx, asynq.NewTask(TypeDelivery, payload), opts...)
	if err == nil && q.schedule[0] == 0 {
		q.wakeWorkers(ctx, q.deliveries)
	}
	return err
}

// EnqueueDeferred queues d again to run after wait: a delivery its
// endpoint put off (a receiver's pause, the endpoint's rate). It is a new
// task, named by d's id and its count of deferrals, that keeps the
// schedule's remaining attempts (d.Retried were made); a redelivery stays
// one attempt.
func (q *Queue) EnqueueDeferred(ctx context.Context, d connector.Delivery, wait time.Duration) error {
	payload, err := json.Marshal(d)
	if err != nil {
		return err
	}
	id := d.ID + ":deferred:" + strconv.Itoa(d.Deferrals)
	maxRetry := max(len(q.schedule)-1-d.Retried, 0)
	if d.Redeliver {
		id, maxRetry = d.ID+":redeliver:deferred:"+strconv.Itoa(d.Deferrals), 0
	}
	return q.enqueue(ctx, asynq.NewTask(TypeDelivery, payload),
		asynq.TaskID(id),
		asynq.Queue(q.deliveries),
		asynq.MaxRetry(maxRetry),
		asynq.Timeout(deliveryTimeout),
		asynq.Retention(q.retention),
		asynq.ProcessIn(wait),
	)
}

// wakeWorkers asks for a wake-up of queue's workers after an enqueue; it
// never waits.
func (q *Queue) wakeWorkers(ctx context.Context, queue string) {
	if q.wake == nil {
		return
	}
	wakes := q.wakes
	if queue == q.deliveries {
		wakes = q.deliveryWakes
	}
	wakes.request(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		q.wake.Publish(ctx, wakeChannel(queue), "")
	})
}

// wakeUps coalesces a Queue's wake-ups: one PUBLISH at a time, in the
// background, and one more after it if any enqueue finished meanwhile. An
// enqueue that finished before a PUBLISH was sent is covered by it (Redis
// runs the PUBLISH after the enqueue), so no task waits for IdleWait, and
// under load a burst of enqueues costs one PUBLISH per round trip instead
// of one each (and each worker one wake-up, not one per task). A lost
// wake-up only costs the task up to the workers' IdleWait.
type wakeUps struct {
	mu      sync.Mutex
	pending bool // an enqueue finished since the last PUBLISH was sent
	running bool // the publishing goroutine runs
	// background counts the PUBLISHes sent here (tests).
	background atomic.Int64
}

// request marks a wake-up due and starts publish in the background unless
// it already runs.
func (w *wakeUps) request(publish func()) {
	w.mu.Lock()
	w.pending = true
	if w.running {
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	go func() {
		for {
			w.mu.Lock()
			if !w.pending {
				w.running = false
				w.mu.Unlock()
				return
			}
			w.pending = false
			w.mu.Unlock()
			w.background.Add(1)
			publish()
		}
	}()
}

func (q *Queue) enqueue(ctx context.Context, t *asynq.Task, opts ...asynq.Option) error {
	_, err := q.client.EnqueueContext(ctx, t, opts...)
	switch {
	case err == nil, errors.Is(err, asynq.ErrTaskIDConflict), errors.Is(err, asynq.ErrDuplicateTask):
		return nil
	default:
		return &connector.Error{
			Code:       connector.EUNAVAILABLE,
			Message:    "queue unavailable",
			RetryAfter: 5 * time.Second,
			Err:        err,
		}
	}
}
