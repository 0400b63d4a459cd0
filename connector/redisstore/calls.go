package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// A job's call record (connector.CallRecord) is one hash, attempts:{id}
// (the key's name predates the record's), living as long as a job (JobTTL
// from the last call begun: an answer comes within its run, so it needs no
// expiry of its own, and the record outlives the job's, set at its creation):
//
//	calls     calls of the compression API begun
//	answered  calls whose answer was recorded
//	last      number of the last call recorded as answered, so that a
//	          repeated answerCall/keepAnswer (a lost reply) counts once
//	kept      JSON connector.KeptAnswer of the charged call
//	open:N    "RUN UNTIL" while call N has no recorded answer: the run that
//	          began it and the Unix ms until which it may still be answered
//	          (that run's deadline), for a failing run to wait on; "0 0"
//	          (answered) once it has one, set in the answer's own HSET where an
//	          HDEL was a command more (a reader before this takes it for a
//	          call open until 1970: not open)
//
// Each change is one script over that one key, so it is atomic and works
// on a Redis Cluster (the id is the hash tag).

// beginCallScript counts a call begun, marks it open (ARGV[2] "RUN UNTIL")
// and returns calls, answered, kept.
var beginCallScript = redis.NewScript(luaBeginCall + `
return beginCall(KEYS[1], ARGV[1], ARGV[2])
`)

// answerCallScript records call ARGV[1] as answered, once (no longer
// open), and keeps the answer ARGV[2] when it is not empty.
var answerCallScript = redis.NewScript(luaAnswerCall + `
if not answerCall(KEYS[1], ARGV[1], ARGV[2]) then return 0 end
return 1
`)

// callRecord returns the job's call record, its open calls included; a job
// without one has a zero record.
func (s *Jobs) callRecord(ctx context.Context, jobID string) (connector.CallRecord, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.calls(jobID)).Result()
	if err != nil {
		return connector.CallRecord{}, storageErr(err)
	}
	rec, err := decodeCallRecord(h["calls"], h["answered"], h["kept"])
	if err != nil {
		return rec, err
	}
	for field, v := range h {
		n, ok := strings.CutPrefix(field, "open:")
		if !ok {
			continue
		}
		call, err := strconv.Atoi(n)
		if err != nil {
			return rec, internalErr(fmt.Errorf("call record: field %q", field))
		}
		var run int
		var until int64
		if _, err := fmt.Sscanf(v, "%d %d", &run, &until); err != nil {
			return rec, internalErr(fmt.Errorf("call record: %s is %q: %w", field, v, err))
		}
		if until == 0 {
			continue // answered
		}
		rec.Open = append(rec.Open, connector.OpenCall{Call: call, Run: run, Until: time.UnixMilli(until)})
	}
	slices.SortFunc(rec.Open, func(a, b connector.OpenCall) int { return a.Call - b.Call })
	return rec, nil
}

// openMark is a call's open:N value: the run that begins it and until when
// it may be answered, the deadline of ctx, the run's (a call never
// outlives its run's context); without one, defaultCallOpen from now.
func openMark(ctx context.Context, run int) string {
	until, ok := ctx.Deadline()
	if !ok {
		until = time.Now().Add(defaultCallOpen)
	}
	return strconv.Itoa(run) + " " + strconv.FormatInt(until.UnixMilli(), 10)
}

// defaultCallOpen is how long a call begun without a deadline on its
// context may still be answered: the worker's task timeout.
const defaultCallOpen = 2 * time.Minute

// beginCall counts a call of the compression API about to begin in run
// number run, marks it open, and returns the record with it.
func (s *Jobs) beginCall(ctx context.Context, jobID string, run int) (connector.CallRecord, error) {
	r, err := beginCallScript.Run(ctx, s.rdb, []string{s.keys.calls(jobID)}, s.jobTTL.Milliseconds(), openMark(ctx, run)).Slice()
	if err != nil {
		return connector.CallRecord{}, storageErr(err)
	}
	if len(r) != 3 {
		return connector.CallRecord{}, internalErr(fmt.Errorf("begin call: %d values", len(r)))
	}
	return decodeCallRecord(r[0], r[1], r[2])
}

// keepAnswerOnly records that call number call was answered 200 and keeps
// its answer for any later run of the job (the bytes are stored apart).
func (s *Jobs) keepAnswerOnly(ctx context.Context, jobID string, call int, answer *connector.KeptAnswer) error {
	data, err := json.Marshal(answer)
	if err != nil {
		return internalErr(err)
	}
	return s.answer(ctx, jobID, call, string(data))
}

func (s *Jobs) answer(ctx context.Context, jobID string, call int, kept string) error {
	n, err := answerCallScript.Run(ctx, s.rdb, []string{s.keys.calls(jobID)},
		strconv.Itoa(call), kept).Int()
	if err != nil {
		return storageErr(err)
	}
	if n == 0 {
		return notFound("call record of job", jobID)
	}
	return nil
}

// decodeCallRecord reads the hash's values as HMGET or the scripts return
// them (strings, integers or nil).
func decodeCallRecord(calls, answered, kept any) (connector.CallRecord, error) {
	var a connector.CallRecord
	var err error
	if a.Calls, err = hashInt(calls); err != nil {
		return a, err
	}
	if a.Answered, err = hashInt(answered); err != nil {
		return a, err
	}
	if k, _ := kept.(string); k != "" {
		a.Kept = new(connector.KeptAnswer)
		if err := json.Unmarshal([]byte(k), a.Kept); err != nil {
			return a, internalErr(fmt.Errorf("decode kept answer: %w", err))
		}
	}
	return a, nil
}

func hashInt(v any) (int, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return int(v), nil
	case string:
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, internalErr(fmt.Errorf("call record: %q is not a count", v))
		}
		return n, nil
	}
	return 0, internalErr(errors.New("call record: unexpected value type"))
}

// keepAnswer, the executor's keep step (Runs.KeepAnswer), writes the
// result's bytes where Blobs keeps them, beside the call record, in one
// round trip: it is Put of the charged call's compressed bytes under
// connector.OutputBlobKey(jobID), then keepAnswerOnly, in one round trip
// (the bytes first, as the worker's keep step wants them; both keys are in
// the job's slot). Bytes over one blob chunk take Put's own path.
func (s *Jobs) keepAnswer(ctx context.Context, jobID string, call int, answer *connector.KeptAnswer, data connector.Bytes, ttl time.Duration) error {
	if data.Size() > blobChunk {
		if err := s.blobs.putBlob(ctx, connector.OutputBlobKey(jobID), connector.BytesReader(data), data.Size(), ttl); err != nil {
			return err
		}
		return s.keepAnswerOnly(ctx, jobID, call, answer)
	}
	kept, err := json.Marshal(answer)
	if err != nil {
		return internalErr(err)
	}
	buf, err := smallBlobBytes(data)
	if err != nil {
		return internalErr(fmt.Errorf("keep answer: %w", err))
	}
	var ans *redis.Cmd
	_, err = s.pipelinedScriptsOn(ctx, s.clientFor(int64(len(buf))), func(p redis.Pipeliner) {
		p.Set(ctx, s.keys.blob(connector.OutputBlobKey(jobID)), buf, max(ttl, 0))
		ans = answerCallScript.EvalSha(ctx, p, []string{s.keys.calls(jobID)},
			strconv.Itoa(call), string(kept))
	})
	if err != nil {
		return storageErr(err)
	}
	if n, _ := ans.Int(); n == 0 {
		return notFound("call record of job", jobID)
	}
	return nil
}

// casBeginScript is casScript (without the publication) that, when it
// writes, also begins a call as beginCallScript does: the job's start and
// its first call's record in one step.
//
// KEYS[1] record, KEYS[2] call record; ARGV[1] SHA-1 hex of the value
// seen; ARGV[2] new value; ARGV[3] JobTTL in ms; ARGV[4] the call's open
// mark. Returns -1 when the record is gone, the record when it changed,
// else calls, answered, kept.
var casBeginScript = redis.NewScript(luaWriteRecord + luaBeginCall + luaRecordUnchanged + `
writeRecord(ARGV[2], '', 3, 2)
return beginCall(KEYS[2], ARGV[3], ARGV[4])
`)

// startJob is Update for the write that starts a job's run, which also
// begins a call of the compression API (beginCall) when it writes, in the
// same script: for a worker that holds the job's input already, so that
// nothing can fail between the two but the call itself. It returns the
// call record with that call.
func (s *Jobs) startJob(ctx context.Context, id string, fn func(*connector.Job) error) (*connector.Job, connector.CallRecord, error) {
	var rec connector.CallRecord
	job, err := s.updateJob(ctx, id, fn, casExtras{begun: &rec})
	return job, rec, err
}

// casBeginCall runs casBeginScript for updateJob and answers as casScript
// does (1, -1 or the current record), keeping the call record in *begun.
func (s *Jobs) casBeginCall(ctx context.Context, key, id string, run int, seen string, data []byte, begun *connector.CallRecord) (any, error) {
	res, err := casBeginScript.Run(ctx, s.rdb, []string{key, s.keys.calls(id)}, seen, data, s.jobTTL.Milliseconds(), openMark(ctx, run)).Result()
	if err != nil {
		return nil, err
	}
	r, ok := res.([]any)
	if !ok {
		return res, nil
	}
	if len(r) != 3 {
		return nil, internalErr(fmt.Errorf("start job: %d values", len(r)))
	}
	if *begun, err = decodeCallRecord(r[0], r[1], r[2]); err != nil {
		return nil, err
	}
	return int64(1), nil
}
