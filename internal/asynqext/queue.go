package asynqext

// VerifiedVersion is the asynq release whose private layout this package was
// checked against (the contract tests compare it with the asynq linked).
const VerifiedVersion = "v0.26.0"

// QueuesKey is the set of every queue name asynq's clients have enqueued to
// (base.AllQueues): a client adds its queue on its first enqueue.
const QueuesKey = "asynq:queues"

// Queue names the keys asynq keeps for one queue (base.QueueKeyPrefix and
// its neighbours). Every key carries the queue in braces, a Redis Cluster
// hash tag: all of a queue's keys live in one slot, so one script may touch
// them all. The names are made once, since a Queue is asked on every
// command a hooked client sends.
type Queue struct {
	name, prefix, taskPrefix       string
	pending, active, lease, paused string
	scheduled, retry               string
}

// QueueOf returns the keys of the asynq queue named name.
func QueueOf(name string) Queue {
	prefix := "asynq:{" + name + "}:"
	return Queue{
		name:       name,
		prefix:     prefix,
		taskPrefix: prefix + "t:",
		pending:    prefix + "pending",
		active:     prefix + "active",
		lease:      prefix + "lease",
		paused:     prefix + "paused",
		scheduled:  prefix + "scheduled",
		retry:      prefix + "retry",
	}
}

// Name is the queue's name.
func (q Queue) Name() string { return q.name }

// Pending is the list of task ids ready to run: an enqueue pushes on the
// left, a dequeue pops from the right (the head).
func (q Queue) Pending() string { return q.pending }

// Active is the list of the ids of the tasks a server has dequeued.
func (q Queue) Active() string { return q.active }

// Lease is the sorted set of the active tasks' leases: id scored by the
// lease's end in Unix seconds, written by the dequeue and extended by the
// server's heartbeat.
func (q Queue) Lease() string { return q.lease }

// Paused exists while the queue is paused (Inspector.PauseQueue).
func (q Queue) Paused() string { return q.paused }

// Scheduled is the sorted set of tasks enqueued to run later, scored by
// when (Unix seconds).
func (q Queue) Scheduled() string { return q.scheduled }

// Retry is the sorted set of tasks waiting for their next attempt.
func (q Queue) Retry() string { return q.retry }

// Task is the hash of task id: its message ("msg") and its state ("state").
func (q Queue) Task(id string) string { return q.taskPrefix + id }

// TaskPrefix is what every task hash's key starts with (Task(id) is
// TaskPrefix()+id).
func (q Queue) TaskPrefix() string { return q.taskPrefix }

// KeyPattern is a SCAN/KEYS pattern that matches every key of the queue
// (QueuesKey aside, which is shared).
func (q Queue) KeyPattern() string { return q.prefix[:len(q.prefix)-1] + "*" }
