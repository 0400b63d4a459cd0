package redisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/redis/go-redis/v9"
)

// A worker finishes a job while the API waits for it (POST /v1/jobs?wait=N).
func ExampleJobs_Wait() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	jobs := redisstore.New(rdb, redisstore.Options{}).Jobs // the aggregate the API and the worker take
	ctx := context.Background()

	job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: "keyhash"}
	if err := jobs.Create(ctx, job); err != nil {
		panic(err)
	}
	go func() { // the worker
		jobs.Update(ctx, job.ID, func(j *connector.Job) error {
			j.Status = connector.StatusCompleted
			return nil
		})
	}()

	wctx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	done, err := jobs.Wait(wctx, job.ID)
	fmt.Println(done.Status, err)
	// Output: completed <nil>
}
