package main

import (
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/server"
)

// The flags of system.Options, grouped by the commands that read them.

func addAppFlags(fs *flagSet, o *system.Options) {
	addRedisFlags(fs, &o.RedisURL, &o.RedisCluster, "Redis URL (redis://host:6379/0, rediss://, redis-sentinel://, or a cluster's with --redis-cluster)")
	fs.String(&o.UpstreamURL, "upstream-url", "UPSTREAM_URL", "", "compression API base URL, ending in /api")
	fs.String(&o.PublicURL, "public-url", "IMGFLOW_PUBLIC_URL", "", "public base URL of the API, for file_url and definitions")
	fs.String(&o.Secret, "secret", "IMGFLOW_SECRET", "", "secret (16+ chars) that signs file URLs, derives webhook secrets and encrypts keys at rest")
	fs.List(&o.AllowHosts, "allow-host", "IMGFLOW_ALLOW_HOSTS", "private hosts that image, callback and hook URLs may reach: CIDR, address, host name, each optionally :port (repeat the flag or separate by commas)")
	fs.Removed("IMGFLOW_ALLOW_PRIVATE_URLS", "name the private hosts imgflow may reach in IMGFLOW_ALLOW_HOSTS (--allow-host) instead, e.g. 10.0.0.0/8 or n8n.lan:5678")
	fs.Duration(&o.ResultTTL, "result-ttl", "IMGFLOW_RESULT_TTL", connector.DefaultResultTTL, "how long compressed files and their links live")
	fs.Duration(&o.JobTTL, "job-ttl", "IMGFLOW_JOB_TTL", redisstore.DefaultJobTTL, "how long job records, their listings and call records live, from the job's creation")
	fs.String(&o.Queue, "queue", "IMGFLOW_QUEUE", "imgflow", "asynq queue name")
	fs.String(&o.Dispatch, "dispatch", "IMGFLOW_DISPATCH", "fair", "how compress jobs reach the workers: fair (imgflow's dispatcher: the keys take turns across the workers, --key-share is a key's limit across them, none by default; serve and work must agree) or asynq (its queue, --key-share per process)")
	fs.Int(&o.MaxHooksPerKey, "max-hooks-per-key", "IMGFLOW_MAX_HOOKS_PER_KEY", connector.DefaultMaxHooks, "hook subscriptions one API key may have, and hooks one event goes to; beyond it 409 too_many_hooks (0: no cap)")
	fs.Duration(&o.HookDisableAfter, "hook-disable-after", "IMGFLOW_HOOK_DISABLE_AFTER", connector.DefaultDisableAfter, "how long a hook or callback URL may fail every delivery attempt before it is disabled")
	fs.Int(&o.DeliveryRate, "delivery-rate", "IMGFLOW_DELIVERY_RATE", connector.DefaultDeliveryRate, "deliveries per second one hook or callback URL gets at most (0: no limit)")
	fs.Int(&o.FreeDeliveriesPerMinute, "free-deliveries-per-minute", "IMGFLOW_FREE_DELIVERIES_PER_MINUTE", connector.DefaultFreeDeliveriesPerMinute, "deliveries of free jobs (deduplicated repeats) one key gets a minute, after a burst as large; beyond it they wait (0: no budget)")
	fs.Int(&o.FreeFailuresPerHour, "free-failures-per-hour", "IMGFLOW_FREE_FAILURES_PER_HOUR", connector.DefaultFreeFailuresPerHour, "jobs one key may have fail uncharged an hour, after a burst as large, one more per paid job; beyond it a new job is 429 too_many_failures (0: no budget)")
	fs.String(&o.BlobStore, "blob-store", "IMGFLOW_BLOB_STORE", "redis", "where image bytes live: redis, or s3://BUCKET?endpoint=URL&region=R&path_style=true with credentials from [$AWS_ACCESS_KEY_ID] and [$AWS_SECRET_ACCESS_KEY]")
	fs.String(&o.Dedupe, "dedupe", "IMGFLOW_DEDUPE", "on", "on: a job whose key, image and options match a completed job's takes its result, uncharged; off: compress every job")
	fs.Bool(&o.Presign, "presign", "IMGFLOW_PRESIGN", false, "with an S3 blob store, give presigned object URLs as file_url")
}

// addAPIFlags adds the settings only the HTTP API reads (serve and dev), so
// that `work --help` does not offer them.
func addAPIFlags(fs *flagSet, o *system.Options) {
	fs.Int(&o.MaxJobsPerKey, "max-jobs-per-key", "IMGFLOW_MAX_JOBS_PER_KEY", 50, "unfinished jobs one API key may have; beyond it 429 too_many_jobs (0: no cap)")
	fs.Int(&o.HookTestsPerMinute, "hook-tests-per-minute", "IMGFLOW_HOOK_TESTS_PER_MINUTE", server.DefaultHookTestsPerMinute, "POST /v1/hooks/{id}/test calls one API key may make a minute; beyond it 429 rate_limited (negative: no limit)")
	fs.Int(&o.HookRecoversPerHour, "hook-recovers-per-hour", "IMGFLOW_HOOK_RECOVERS_PER_HOUR", server.DefaultHookRecoversPerHour, "POST /v1/hooks/{id}/recover calls one API key may make an hour; beyond it 429 rate_limited (negative: no limit)")
	fs.Int(&o.MaxLargeBodies, "max-large-bodies", "IMGFLOW_MAX_LARGE_BODIES", 0, "request bodies over 256 KiB the API reads at once (0: sized from the memory limit)")
	fs.Duration(&o.SecretOverlap, "secret-overlap", "IMGFLOW_SECRET_OVERLAP", connector.DefaultSecretOverlap, "how long a rotated webhook secret still signs deliveries beside the new one")
	fs.Duration(&o.KeyGrace, "key-grace", "IMGFLOW_KEY_GRACE", 24*time.Hour, "while the compression API cannot check keys, serve only keys it confirmed within this long; others get 503 upstream_unavailable")
}

// addWorkerFlags adds the settings only the worker reads (work, dev).
func addWorkerFlags(fs *flagSet, o *system.Options) {
	fs.Int(&o.KeyShare, "key-share", "IMGFLOW_KEY_SHARE", 0, "compress jobs one API key runs at once, batch items included. fair dispatch: across the workers (0 or negative: no limit; the keys take turns anyway, so a lone key uses every worker). asynq: in each worker process, its others parked while other keys' run (0: all but one of --concurrency; negative: no share)")
	fs.Int(&o.DeliveryKeyShare, "delivery-key-share", "IMGFLOW_DELIVERY_KEY_SHARE", 0, "deliveries of one API key's jobs and batches run at once across the workers; its others wait while other keys' run (0: half of --delivery-concurrency; negative: no share)")
	fs.Int(&o.DeliveryConcurrency, "delivery-concurrency", "IMGFLOW_DELIVERY_CONCURRENCY", 0, "deliveries (callbacks, hook events) run at once by this process, apart from compress tasks (0: as --concurrency)")
}

// addRedisFlags registers --redis and --redis-cluster with their variables.
func addRedisFlags(fs *flagSet, url *string, cluster *bool, usage string) {
	fs.String(url, "redis", "REDIS_URL", "", usage)
	fs.Bool(cluster, "redis-cluster", "IMGFLOW_REDIS_CLUSTER", false, "REDIS_URL names a Redis Cluster: redis://host1:port1?addr=host2:port2&addr=host3:port3")
}
