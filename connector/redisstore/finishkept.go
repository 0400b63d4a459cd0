package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// keepEndScript is answerCallScript's keep of a charged answer with its
// bytes, then endJobScript's end of the job (a completion: no kept answer
// to yield to), in one script: every key is in the job's slot. The keep is
// written whatever the end finds, as when it was a step of its own: a
// stale run's answer stays for the live run. A job without a call record
// (expired) keeps only its bytes.
//
// KEYS[1] record, KEYS[2] call record, KEYS[3] input blob, KEYS[4] output
// blob; ARGV[1] SHA-1 hex of the record seen; ARGV[2] new record; ARGV[3]
// channel to publish on; ARGV[4] the call's number; ARGV[5] the kept
// answer; ARGV[6] the output's bytes; ARGV[7] their TTL in ms (0: none).
// Answers as endJobScript does.
var keepEndScript = redis.NewScript(luaAnswerCall + luaWriteRecord + `
answerCall(KEYS[2], ARGV[4], ARGV[5])
if ARGV[7] ~= '0' then
  redis.call('SET', KEYS[4], ARGV[6], 'PX', ARGV[7])
else
  redis.call('SET', KEYS[4], ARGV[6])
end
` + luaRecordUnchanged + `
writeRecord(ARGV[2], ARGV[3], 3, 3)
return 1
`)

// keepWrite is a charged answer to keep with the job's end (casExtras).
type keepWrite struct {
	call int
	kept []byte // JSON connector.KeptAnswer
	out  []byte // the compressed bytes
	ttl  time.Duration
	done bool // a script kept it
}

// FinishKept is KeepAnswer then Finish, in one script when the bytes are
// in this Redis and within one blob chunk (keepEndScript: the job's end
// costs one round trip and one script fewer), as the two steps otherwise.
// The answer is kept even when the end is refused (ErrJobFinished,
// ErrStaleRun), for the live run.
func (r *Runs) FinishKept(ctx context.Context, id string, run, call int, answer *connector.KeptAnswer, data connector.Bytes, ttl time.Duration, end func(*connector.Job)) (*connector.Job, connector.HooksHint, error) {
	if r.blobs != nil || data.Size() > blobChunk {
		if err := r.KeepAnswer(ctx, id, call, answer, data, ttl); err != nil {
			return nil, connector.HooksUnknown, err
		}
		return r.Finish(ctx, id, run, end)
	}
	kept, err := json.Marshal(answer)
	if err != nil {
		return nil, connector.HooksUnknown, internalErr(err)
	}
	out, err := smallBlobBytes(data)
	if err != nil {
		return nil, connector.HooksUnknown, internalErr(fmt.Errorf("keep answer: %w", err))
	}
	k := &keepWrite{call: call, kept: kept, out: out, ttl: ttl}
	hooks := connector.HooksUnknown
	job, err := r.jobs.updateJob(ctx, id, runGuard(run, end), casExtras{hooks: &hooks, runEnd: true, keep: k})
	if !k.done && (err == nil || errors.Is(err, connector.ErrJobFinished) || errors.Is(err, connector.ErrStaleRun)) {
		// Refused before any script ran (or ended by one that did not
		// keep): the answer is kept on its own.
		if kerr := r.KeepAnswer(ctx, id, call, answer, data, ttl); kerr != nil {
			return nil, hooks, kerr
		}
	}
	return job, hooks, err
}
