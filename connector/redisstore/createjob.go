package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// inputForMaking is a new job's input as the making round trip writes it:
// the bytes to SET beside the record, or nil when there is no input or it
// is over one blob chunk (then written here first, by Put's own path).
func (s *Jobs) inputForMaking(ctx context.Context, id string, input connector.Bytes, inputTTL time.Duration) ([]byte, error) {
	if input == nil {
		return nil, nil
	}
	if input.Size() > blobChunk {
		return nil, s.blobs.putBlob(ctx, connector.InputBlobKey(id), connector.BytesReader(input), input.Size(), inputTTL)
	}
	in, err := smallBlobBytes(input)
	if err != nil {
		return nil, internalErr(fmt.Errorf("job %s: input: %w", id, err))
	}
	return in, nil
}

// admitAndListLua defines admitAndList(): Admit's admission (when ARGV[3] >
// 0) and the key's budget of free failures (when ARGV[7] > 0,
// failbudget.go) followed by Create's listing entry, on the owner's two keys
// (one slot): a job is listed only when it was admitted.
//
// KEYS[1] inflight set, KEYS[2] listing; ARGV[1] now (Unix ms); ARGV[2]
// place deadline (Unix ms); ARGV[3] limit (0: no cap); ARGV[4] job id;
// ARGV[5] oldest id the listing keeps (exclusive floor; "": no trim this
// time, listingFloor); ARGV[6] the listing's TTL ms (listingTTL);
// ARGV[7] the failure window ms (0: no budget); ARGV[8] one failure's
// interval ms; ARGV[9] the job this process listed when it last set the
// listing's expiry ("": set it now, and the in-flight set's;
// listingexpiry.go); ARGV[10] the in-flight set's expiry when it is set
// (Unix ms: the place's deadline plus listingSlack).
//
// Under a cap the set is counted first: an empty one does not exist, so it
// holds neither this job's place nor a budget and the ZMSCORE that reads
// them is skipped. Places past their deadline are pruned when they would
// make the owner full, so an admission with room costs no prune; a place
// the job holds already (a retry) counts when it is live, and is renewed
// when it is not. A budget's tat behind now is as good as none (spending
// starts from max(tat, now)). The listing's expiry is set when ARGV[9] is
// "" or when the listing did not exist before the ZADD (neither ARGV[4]
// nor ARGV[9] was in it). The in-flight set's expiry is set on the same
// beat, and whenever the new place is the set's only one (a set made
// anew, or one that held only its budget, whose expiry is the budget's):
// inflightexpiry.go says why the places made between beats are covered.
// Returns 2 when admitted with a new place and listed, 1 when admitted (a
// place held already, or no cap) and listed, 0 when the owner has no
// place left, and minus the wait in ms when its free failures are over
// budget.
var admitAndListLua = `
local function admitAndList()
  local placed = 1
  local now = tonumber(ARGV[1])
  local cap = tonumber(ARGV[3])
  local window = tonumber(ARGV[7])
  if cap > 0 or window > 0 then
    local held = 0
    if cap > 0 then held = redis.call('ZCARD', KEYS[1]) end
    local s = {false, false}
    if cap == 0 or held > 0 then
      s = redis.call('ZMSCORE', KEYS[1], ARGV[4], '` + failuresMember + `')
    end
    if not (s[1] and tonumber(s[1]) > now) then
      local tat = tonumber(s[2] or now)
      local over = tat - now - (window - tonumber(ARGV[8]))
      if window > 0 and over > 0 then return -math.ceil(over) end
      if cap > 0 then
        if s[1] then held = held - 1 end
        if s[2] then held = held - 1 end
        if held >= cap then
          -- Full: drop the places past their deadline, and count again.
          redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
          held = redis.call('ZCARD', KEYS[1])
          if s[2] and tat > now then held = held - 1 end
          if held >= cap then return 0 end
        end
        redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
        if held == 0 or ARGV[9] == '' then
          redis.call('PEXPIREAT', KEYS[1], math.max(tonumber(ARGV[10]), tat))
        end
        placed = 2
      end
    end
  end
  local expire = ARGV[9] == ''
  if expire then
    redis.call('ZADD', KEYS[2], 0, ARGV[4])
  else
    expire = redis.call('ZADD', KEYS[2], 0, ARGV[4], 0, ARGV[9]) == 2
  end
  if ARGV[5] ~= '' then redis.call('ZREMRANGEBYLEX', KEYS[2], '-', ARGV[5]) end
  if expire then redis.call('PEXPIRE', KEYS[2], ARGV[6]) end
  return placed
end
`

// admitAndListScript is admitAndList on its own, beside the record's write
// in CreateWithInput's pipeline; a store that queues at making runs it
// inside its making script instead (makequeued.go).
var admitAndListScript = redis.NewScript(admitAndListLua + `return admitAndList()`)

// listingFloor is the exclusive floor below which a new job's listing
// entry trims the owner's listing, for 1 job in 16 (by its id's last hex
// digit, random in a UUIDv7), "" for the others: one trim drops every
// entry older than JobTTL, List skips entries whose record expired, and
// the listing itself expires JobTTL after the last job, so the others'
// trims were a command per job for nothing.
func (s *Jobs) listingFloor(id string, now time.Time) string {
	if id != "" && id[len(id)-1] != '0' {
		return ""
	}
	return "(" + idFloor(now.Add(-s.jobTTL))
}

// CreateWithInput makes a new job in one round trip: it takes one of the
// owner's limit in-flight places (Admit; limit 0: no cap), stores the
// input bytes (Put under connector.InputBlobKey, for inputTTL; nil: no
// input) and creates the record and its listing entry (Create). A full
// owner gets ETOOMANY, as from Admit, and nothing of the job is left. An
// id whose record exists already is an error wrapping connector.ErrJobExists,
// and that job is left as it was.
//
// The record and the input go in the job's slot, the place and the listing
// entry in the owner's (admitAndListScript), in one pipeline. The input is
// written where Blobs keeps it, in the same round trip as the record: the
// making of a job is one step, so it stays here. An input over
// one blob chunk is written first by Put's own path.
func (s *Jobs) CreateWithInput(ctx context.Context, job *connector.Job, input connector.Bytes, inputTTL time.Duration, limit int) error {
	now := s.now()
	// Without a cap the making takes no place (no other path takes one for
	// a job made here), so its end has none to free: a command less a job.
	job.Unplaced = limit <= 0
	data, err := newJobRecord(job, now)
	if err != nil {
		return err
	}
	in, err := s.inputForMaking(ctx, job.ID, input, inputTTL)
	if err != nil {
		return err
	}
	listedBefore := s.listings.listedBefore(job.Owner, now)
	if listedBefore == job.ID {
		listedBefore = "" // listed beside itself, it could not tell a new listing
	}
	admission := s.admissionArgs(job.ID, now, limit, listedBefore)
	if s.making != nil {
		return s.createQueued(ctx, job, data, in, inputTTL, admission, listedBefore == "", now)
	}
	var listed *redis.Cmd
	var created *redis.BoolCmd
	_, err = s.pipelinedScriptsOn(ctx, s.clientFor(int64(len(in))), func(p redis.Pipeliner) {
		listed = admitAndListScript.EvalSha(ctx, p, []string{s.keys.inflight(job.Owner), s.keys.jobIndex(job.Owner)}, admission...)
		if in != nil {
			p.Set(ctx, s.keys.blob(connector.InputBlobKey(job.ID)), in, max(inputTTL, 0))
		}
		created = p.SetNX(ctx, s.keys.job(job.ID), data, s.jobTTL)
		s.noteUnqueued(ctx, p, job.ID, now)
	})
	if err != nil {
		return storageErr(err)
	}
	admitted, _ := listed.Int()
	if admitted > 0 && listedBefore == "" {
		s.listings.expirySet(job.Owner, job.ID, now)
	}
	if !created.Val() {
		// The id is another request's job (the same planned id): its
		// record stays, and so does its input, which this call wrote over
		// with the same request's bytes; a place this call took for it
		// goes (its maker took one, or needed none).
		if admitted == 2 {
			s.rdb.ZRem(context.WithoutCancel(ctx), s.keys.inflight(job.Owner), job.ID)
		}
		return jobExists(job.ID)
	}
	if admitted <= 0 {
		// Refused: the record and input this call wrote beside the script
		// go; nothing knows the id yet, and they expire if this DEL is lost.
		s.rdb.Del(context.WithoutCancel(ctx), s.keys.job(job.ID), s.keys.blob(connector.InputBlobKey(job.ID)))
		return s.refusal(int64(admitted))
	}
	return nil
}

// admissionArgs are admitAndList's ARGV[1..10] for job id made at now.
func (s *Jobs) admissionArgs(id string, now time.Time, limit int, listedBefore string) []any {
	window, interval := s.failureArgs()
	return []any{now.UnixMilli(), now.Add(s.inflightTTL).UnixMilli(), limit, id,
		s.listingFloor(id, now), s.listingTTL().Milliseconds(), window, interval, listedBefore,
		now.Add(s.inflightTTL + listingSlack).UnixMilli()}
}

// jobExists is CreateWithInput's error for an id that is another
// request's job already.
func jobExists(id string) error {
	return internalErr(fmt.Errorf("create job %s: %w", id, connector.ErrJobExists))
}
