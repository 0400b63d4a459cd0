package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

var redisDown = &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable", Retryable: true}

func TestRetryInPlaceTriesAgainWhileRedisIsDown(t *testing.T) {
	calls := 0
	err := retryInPlace(context.Background(), func() error {
		if calls++; calls < 3 {
			return redisDown
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("retryInPlace = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestRetryInPlaceStopsAtAFinalErrorOrTheDeadline(t *testing.T) {
	calls := 0
	bug := errors.New("a bug, not an outage")
	if err := retryInPlace(context.Background(), func() error { calls++; return bug }); err != bug || calls != 1 {
		t.Errorf("retryInPlace = %v after %d calls, want the final error after 1", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	calls = 0
	if err := retryInPlace(ctx, func() error { calls++; return redisDown }); err != redisDown || calls < 2 {
		t.Errorf("retryInPlace = %v after %d calls, want the outage's error after several tries", err, calls)
	}
}

func TestJudgeRetriesWhatMayPassAndFailsTheRest(t *testing.T) {
	upstream500 := &connector.Error{Code: connector.EUPSTREAM, UpstreamStatus: 500, Retryable: true}
	cutOff200 := &connector.Error{Code: connector.EUPSTREAM, UpstreamStatus: 200, Retryable: true}
	noCredits := &connector.Error{Code: connector.ENOCREDITS, UpstreamStatus: 429}
	fetch := &connector.Error{Code: connector.EFETCH, Retryable: true}
	for _, tc := range []struct {
		name          string
		err           error
		retried       int
		want          verdict
		wantRetryable bool
	}{
		{"500 early", upstream500, 0, retryTask, false},
		{"500 on the last attempt", upstream500, 8, failJob, true},
		{"Redis down", redisDown, 3, retryTask, false},
		{"429 is final", noCredits, 0, failJob, false},
		{"200 unreadable is retried like a call without an answer", cutOff200, 0, retryTask, false},
		{"fetch gets few retries", fetch, maxFetchRetries, failJob, true},
	} {
		v, r := judge(tc.err, tc.retried, 8)
		if v != tc.want || r != tc.wantRetryable {
			t.Errorf("%s: judge = %v, %v; want %v, %v", tc.name, v, r, tc.want, tc.wantRetryable)
		}
	}
}
