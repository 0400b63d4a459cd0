package asynqext

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// StateField is the field of a task's hash (Queue.Task) that holds its
// TaskState.
const StateField = "state"

// TaskState is the StateField of a task's hash (base.TaskState's strings).
type TaskState string

// The states a task's hash records.
const (
	NoTask        TaskState = "" // no hash: never enqueued, deleted, or its retention ran out
	TaskPending   TaskState = "pending"
	TaskActive    TaskState = "active"
	TaskScheduled TaskState = "scheduled"
	TaskRetry     TaskState = "retry"
	TaskCompleted TaskState = "completed" // succeeded, kept for its retention
	TaskArchived  TaskState = "archived"  // out of retries, or archived by hand
)

// Finished reports whether the task will not run again by itself: asynq
// keeps it (completed for its retention, archived for good) and an enqueue
// under its id is a no-op until it is deleted.
func (s TaskState) Finished() bool { return s == TaskCompleted || s == TaskArchived }

// TaskStates reads the states of the tasks ids of q in one round trip; a
// task without a hash reads NoTask.
func (q Queue) TaskStates(ctx context.Context, rdb redis.Cmdable, ids []string) ([]TaskState, error) {
	cmds := make([]*redis.StringCmd, len(ids))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGet(ctx, q.Task(id), StateField)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	states := make([]TaskState, len(ids))
	for i, c := range cmds {
		states[i] = TaskState(c.Val()) // "" when there is no task
	}
	return states, nil
}
