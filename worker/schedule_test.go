package worker

import (
	"context"
	"errors"
	"testing"
)

func TestRetryInPlaceTriesAgainUntilTheStepSucceeds(t *testing.T) {
	calls := 0
	err := retryInPlace(context.Background(), func() error {
		calls++
		if calls < 3 {
			return errors.New("redis hiccup")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("retryInPlace = %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	err = retryInPlace(context.Background(), func() error { calls++; return errors.New("down") })
	if err == nil || calls != len(inPlaceDelays) {
		t.Errorf("retryInPlace = %v after %d calls, want the step's error after %d", err, calls, len(inPlaceDelays))
	}
}
