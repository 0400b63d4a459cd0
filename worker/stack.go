package worker

// growStack makes the calling goroutine's stack 16 KiB at once, while it is
// still shallow. A compress job runs on a new goroutine (fair dispatch's
// runner and asynq both start one per job) whose stack starts at 8 KiB, and
// its deepest path (the upstream's answer decoded through encoding/json,
// about 7.5 KiB below the handler) outgrew it, so every job paid a stack
// copy at that depth, where copying means walking and adjusting every frame:
// 3.6 % of a worker's CPU in BenchmarkJobsEndToEnd's profile (BENCHMARK.md).
// Growing here copies a frame or two, and 16 KiB stacks come from the
// runtime's per-P cache. CockroachDB's growstack does the same.
//
//go:noinline
func growStack() byte {
	var buf [8 << 10]byte
	return touchStack(buf[:])
}

// touchStack reads growStack's buffer so that it is not optimised away; b
// does not escape, so the buffer stays on the stack.
//
//go:noinline
func touchStack(b []byte) byte { return b[len(b)-1] }
