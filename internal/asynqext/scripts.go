package asynqext

import (
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Script is one of asynq's Lua scripts on a queue, told apart by its keys:
// asynq sends each as EVALSHA (EVAL after NOSCRIPT) with its keys first.
type Script int

const (
	// OtherScript is any other command or script (completing a task,
	// extending leases, another queue's scripts).
	OtherScript Script = iota
	// Enqueue is Client.Enqueue of a task to run now (enqueueCmd): keys
	// the task's hash, the pending list. It is the only script such an
	// enqueue sends.
	Enqueue
	// Dequeue is a server's dequeue (dequeueCmd): keys pending, paused,
	// active, lease. It answers nil (EmptyDequeue) when the queue is empty
	// or paused.
	Dequeue
	// Forward is a server's move of due scheduled or retry tasks to the
	// pending list (forwardCmd): keys scheduled or retry, pending. It
	// answers how many it moved (Forwarded).
	Forward
)

func (s Script) String() string {
	switch s {
	case Enqueue:
		return "enqueue"
	case Dequeue:
		return "dequeue"
	case Forward:
		return "forward"
	}
	return "other script"
}

// ScriptOf tells which of asynq's scripts on q cmd is.
func (q Queue) ScriptOf(cmd redis.Cmder) Script {
	if name := cmd.Name(); name != "evalsha" && name != "eval" {
		return OtherScript
	}
	// EVALSHA sha numkeys key...
	args := cmd.Args()
	if len(args) < 3 {
		return OtherScript
	}
	n, ok := count(args[2])
	if !ok || len(args) < 3+n {
		return OtherScript
	}
	return q.classify(n, func(i int) string { s, _ := args[3+i].(string); return s })
}

// ScriptOn tells which of asynq's scripts on q a script with keys is (for
// a client's Eval and EvalSha, before the command is made).
func (q Queue) ScriptOn(keys []string) Script {
	return q.classify(len(keys), func(i int) string { return keys[i] })
}

func (q Queue) classify(n int, key func(int) string) Script {
	switch {
	case n == 4 && key(0) == q.pending && key(1) == q.paused:
		return Dequeue
	case n == 2 && key(1) == q.pending && (key(0) == q.scheduled || key(0) == q.retry):
		return Forward
	case n == 2 && key(1) == q.pending && len(key(0)) > len(q.taskPrefix) && key(0)[:len(q.taskPrefix)] == q.taskPrefix:
		return Enqueue
	}
	return OtherScript
}

// count reads EVAL's numkeys as go-redis sends it (an int) or as a string.
func count(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

// EmptyDequeue reports whether a Dequeue script's error says it found no
// task to run (asynq's script answers nil).
func EmptyDequeue(err error) bool { return errors.Is(err, redis.Nil) }

// Forwarded is how many tasks a Forward script moved to the pending list
// (0 on an error).
func Forwarded(cmd *redis.Cmd) int64 {
	n, err := cmd.Int64()
	if err != nil {
		return 0
	}
	return n
}
