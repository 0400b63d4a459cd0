package catalog

import (
	"encoding/json"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Realistic answers, as the API encodes them: the platforms show them as
// examples and test data, and the tests check every output against them.

var sampleTime = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

func int64p(n int64) *int64        { return &n }
func float64p(v float64) *float64  { return &v }
func timep(t time.Time) *time.Time { return &t }

// SampleJob is a realistic completed job, as the API answers it.
func SampleJob() *connector.Job {
	return &connector.Job{
		ID:         "01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f",
		Status:     connector.StatusCompleted,
		CreatedAt:  sampleTime,
		UpdatedAt:  sampleTime.Add(1800 * time.Millisecond),
		StartedAt:  timep(sampleTime.Add(120 * time.Millisecond)),
		FinishedAt: timep(sampleTime.Add(1800 * time.Millisecond)),
		Input: connector.JobInput{Kind: connector.InputURL, URL: "https://images.example.com/photos/team-offsite.jpg",
			Filename: "team-offsite.jpg", Size: 2483114, MIMEType: "image/jpeg",
			SHA256: "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d",
			Type:   "image/jpeg", Width: 4032, Height: 3024},
		Result: &connector.JobResult{OriginalSize: 2483114, CompressedSize: 612880, CompressionRatio: 75.32,
			CreditsRemaining: int64p(498), MIMEType: "image/jpeg", Filename: "team-offsite.jpg",
			Type: "image/jpeg", Width: 1600, Height: 1200, Quality: 84, Score: float64p(78.42),
			FileURL: "https://imgflow.example.com/v1/jobs/01937a4e-5c2b-7d3e-9f41-8a6b2c0d1e2f/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.Qm9fZ3Vlc3M"},
		Callback:      &connector.DeliveryState{Status: connector.DeliveryDelivered, Attempts: 1, LastStatus: 200},
		Metadata:      json.RawMessage(`{"record_id":"rec_8812"}`),
		Runs:          1,
		UpstreamCalls: 1,
		Transform: connector.Transform{Resize: &connector.Resize{Method: connector.ResizeScale, Width: 1600},
			Target: &connector.Target{MaxBytes: 700_000, MinScore: float64p(75)}},
	}
}

// SampleFailedJob is a realistic failed job: the account ran out of credits.
func SampleFailedJob() *connector.Job {
	j := SampleJob()
	j.Status = connector.StatusFailed
	j.Result = nil
	j.Callback = nil
	j.Error = &connector.JobError{Code: connector.ENOCREDITS, Message: "Insufficient credits", UpstreamStatus: 429,
		CreditsRemaining: int64p(0), Retryable: false}
	return j
}

// SampleAccount is a realistic answer of GET /v1/account.
func SampleAccount() *connector.AccountAnswer {
	return &connector.AccountAnswer{
		Account: connector.Account{Valid: true, UserID: "user_7f3a9c", SubscriptionType: "Free",
			CreditsRemaining: 499, MaxImageSize: connector.MaxImageSize},
		WebhookSecret: "whsec_MfKQ9r8GKYqXJjDzLh9nQWm2sV3c4PdX",
	}
}

// SampleHook is a realistic hook subscription as POST /v1/hooks answers it.
func SampleHook() *connector.HookAnswer {
	return &connector.HookAnswer{
		Hook: connector.Hook{ID: "01937a52-0a1b-7c2d-8e3f-4a5b6c7d8e9f", TargetURL: "https://hooks.zapier.com/hooks/standard/123456/abcdef/",
			Event: connector.EventJobFinished, CreatedAt: sampleTime, Status: connector.HookEnabled},
		Secret: "whsec_Zt4pQ2mW8xK1vN7bR3cY6hJ9sL5dF0gA",
	}
}

// SampleDeliveryList is a realistic delivery log: a callback delivered on
// its second attempt and a hook delivered at once.
func SampleDeliveryList() *connector.DeliveryList {
	j := SampleJob()
	first := sampleTime.Add(1900 * time.Millisecond)
	second := first.Add(5 * time.Second)
	cb, hook := connector.CallbackDeliveryID(j.ID), connector.HookDeliveryID(j.ID, SampleHook().ID)
	return &connector.DeliveryList{JobID: j.ID, Deliveries: connector.GroupDeliveries([]*connector.DeliveryAttempt{
		{DeliveryID: cb, Event: connector.EventJobCompleted, Target: "https://flows.example.com/webhook-waiting/812",
			At: first, DurationMS: 15003, Error: "webhook URL host flows.example.com did not answer within 15s",
			Outcome: connector.OutcomeRetrying, NextRetryAt: &second},
		{DeliveryID: hook, HookID: SampleHook().ID, Event: connector.EventJobCompleted, Target: "https://hooks.zapier.com/hooks/standard/123456/abcdef/",
			At: first, DurationMS: 184, StatusCode: 200, Response: `{"status":"success"}`, Outcome: connector.OutcomeDelivered},
		{DeliveryID: cb, Event: connector.EventJobCompleted, Target: "https://flows.example.com/webhook-waiting/812",
			At: second, DurationMS: 95, StatusCode: 200, Response: `{"message":"Workflow was started"}`, Outcome: connector.OutcomeDelivered},
	})}
}
