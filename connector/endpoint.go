package connector

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// An endpoint is where deliveries go: one hook, or one callback URL across
// the jobs of one key. Its state (failing since when, paused by the
// receiver until when, disabled or not) is shared by every message sent to
// it, and EndpointPolicy alone says what that state allows.

// EndpointState is what imgflow remembers of one endpoint.
type EndpointState struct {
	// FailingSince is the first failed attempt of the current run of
	// failures; zero once an attempt succeeds.
	FailingSince time.Time
	// PausedUntil is when the receiver's Retry-After (on a 429 or 503)
	// lets the next attempt to this endpoint go, any message's.
	PausedUntil time.Time
	// DisabledAt and DisabledReason are set once the endpoint is disabled.
	DisabledAt     time.Time
	DisabledReason string
}

// Disabled reports whether nothing more may be sent to the endpoint.
func (s EndpointState) Disabled() bool { return !s.DisabledAt.IsZero() }

// Reasons an endpoint is disabled.
const (
	DisabledGone    = "gone"    // the receiver answered 410 Gone
	DisabledFailing = "failing" // every attempt failed for EndpointPolicy.DisableAfter
)

// Defaults of EndpointPolicy.
const (
	DefaultDisableAfter  = 5 * 24 * time.Hour // as Svix
	DefaultDeliveryRate  = 20                 // deliveries per second per endpoint
	DefaultMaxHooks      = 25                 // hooks per key
	DefaultSecretOverlap = 24 * time.Hour     // both signatures after a rotation
)

// EndpointPolicy says what an endpoint's state allows: whether an attempt
// may go now, and when failures disable it.
type EndpointPolicy struct {
	// DisableAfter is how long an endpoint may fail every attempt before it
	// is disabled (IMGFLOW_HOOK_DISABLE_AFTER). 0 means DefaultDisableAfter.
	DisableAfter time.Duration
	// Rate is how many deliveries per second an endpoint gets at most
	// (IMGFLOW_DELIVERY_RATE), spaced 1/Rate apart: a burst of finished
	// jobs reaches a small receiver evenly. 0 means DefaultDeliveryRate;
	// negative, no limit.
	Rate float64
}

// WithDefaults fills the zero fields.
func (p EndpointPolicy) WithDefaults() EndpointPolicy {
	if p.DisableAfter <= 0 {
		p.DisableAfter = DefaultDisableAfter
	}
	if p.Rate == 0 {
		p.Rate = DefaultDeliveryRate
	}
	return p
}

// Admission is the policy's answer before an attempt.
type Admission struct {
	// Dropped is set, with why, when nothing may be sent: the endpoint is
	// disabled.
	Dropped string
	// Wait is how long the attempt must wait first: the receiver's pause.
	// The rate limit's wait comes on top (EndpointStore.TakeSlot).
	Wait time.Duration
}

// Admit says whether an attempt to an endpoint in state s may go at now.
func (p EndpointPolicy) Admit(s EndpointState, now time.Time) Admission {
	if s.Disabled() {
		return Admission{Dropped: "not sent: the endpoint is disabled (" + DescribeDisabled(s.DisabledReason) + ")"}
	}
	if s.PausedUntil.After(now) {
		return Admission{Wait: s.PausedUntil.Sub(now)}
	}
	return Admission{}
}

// DisableFor says whether a failed attempt disables the endpoint, and why:
// a 410 at once, other failures once the endpoint has failed every attempt
// since failingSince for DisableAfter.
func (p EndpointPolicy) DisableFor(gone bool, failingSince, now time.Time) (reason string, disable bool) {
	p = p.WithDefaults()
	switch {
	case gone:
		return DisabledGone, true
	case !failingSince.IsZero() && now.Sub(failingSince) >= p.DisableAfter:
		return DisabledFailing, true
	}
	return "", false
}

// DescribeDisabled says a disabled reason in words.
func DescribeDisabled(reason string) string {
	switch reason {
	case DisabledGone:
		return "its target answered 410 Gone"
	case DisabledFailing:
		return "every attempt failed for too long"
	}
	return reason
}

// HookEndpointID and CallbackEndpointID name endpoints: a hook by its id,
// a callback URL by its owner and its scheme, host and path (the query
// string of a resume URL changes from run to run).
func HookEndpointID(hookID string) string { return "hook:" + hookID }
func CallbackEndpointID(owner, target string) string {
	sum := sha256.Sum256([]byte(TargetForDisplay(target)))
	return "cb:" + owner + ":" + hex.EncodeToString(sum[:12])
}

// HookDisabledData is the data of a hook.disabled event.
type HookDisabledData struct {
	// Kind is "hook" or "callback".
	Kind   string `json:"kind"`
	HookID string `json:"hook_id,omitempty"`
	// Target is the endpoint's URL without query string or user info.
	Target     string    `json:"target"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message"`
	DisabledAt time.Time `json:"disabled_at"`
}

// NewHookDisabled describes a disabled endpoint for its owner.
func NewHookDisabled(hookID, target, reason string, at time.Time) *HookDisabledData {
	kind := KindHook
	if hookID == "" {
		kind = KindCallback
	}
	return &HookDisabledData{Kind: kind, HookID: hookID, Target: TargetForDisplay(target), Reason: reason,
		Message: fmt.Sprintf("deliveries stopped: %s", DescribeDisabled(reason)), DisabledAt: at.UTC()}
}
