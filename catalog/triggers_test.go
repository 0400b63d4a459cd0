package catalog

import (
	"slices"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

func TestEveryHookTriggerSaysWhichEventsItSubscribes(t *testing.T) {
	c := Default()
	want := map[string][]string{
		"job_finished":   {connector.EventJobFinished, connector.EventJobCompleted, connector.EventJobFailed},
		"credits_low":    {connector.EventCreditsLow},
		"batch_finished": {connector.EventBatchFinished},
	}
	seen := map[string]bool{}
	for _, op := range c.HookTriggers() {
		seen[op.Key] = true
		if !slices.Equal(op.HookEvents, want[op.Key]) {
			t.Errorf("%s: subscribes %v, want %v", op.Key, op.HookEvents, want[op.Key])
		}
		if op.Method != "POST" || op.Path != HooksPath {
			t.Errorf("%s: subscribes with %s %s, want POST %s", op.Key, op.Method, op.Path, HooksPath)
		}
		var pick *Field
		for i, f := range op.Inputs {
			if f.Key == HookEventInput {
				pick = &op.Inputs[i]
			}
		}
		switch {
		case len(op.HookEvents) == 1 && (pick != nil || op.FixedHookEvent() != op.HookEvents[0]):
			t.Errorf("%s: one event, so no event input and a fixed event; got input %v, fixed %q", op.Key, pick, op.FixedHookEvent())
		case len(op.HookEvents) > 1 && (pick == nil || !pick.Required || !slices.Equal(pick.Choices, op.HookEvents) || op.FixedHookEvent() != ""):
			t.Errorf("%s: several events, so a required event input choosing among them; got %+v", op.Key, pick)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("hook triggers %v, want %v", seen, want)
	}
}

func TestCreditsLowTakesAnOptionalThresholdDefaultingToTheServers(t *testing.T) {
	op := Default().Operation("credits_low")
	if len(op.Inputs) != 1 {
		t.Fatalf("credits_low inputs %+v, want threshold only", op.Inputs)
	}
	th := op.Inputs[0]
	if th.Key != "threshold" || th.Type != FieldInteger || th.Required || th.Default != "50" || connector.DefaultCreditsThreshold != 50 {
		t.Errorf("threshold %+v: want an optional integer defaulting to %d", th, connector.DefaultCreditsThreshold)
	}
	s := SampleCreditsLow()
	if s.CreditsRemaining > s.Threshold || s.JobID != SampleJob().ID {
		t.Errorf("sample %+v: want a balance at or below its threshold, naming a job", s)
	}
}

func TestBatchFinishedSampleIsAFinishedBatch(t *testing.T) {
	b := SampleFinishedBatch()
	if b.Status != connector.BatchFinished || b.FinishedAt == nil || b.Counts.Ended() != b.Counts.Total || b.Counts.Queued+b.Counts.Processing != 0 {
		t.Errorf("sample batch %+v: want finished, every item ended", b)
	}
	if b.Links == nil || b.Links.Archive == "" || b.Callback != nil {
		t.Errorf("sample batch: want links with the archive and no callback state, as the event carries it")
	}
}
