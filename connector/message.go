package connector

import (
	"encoding/json"
	"time"
)

// Message is an event that is not a job's own (a job's event is rendered
// from the job at each attempt): hook.disabled, hook.test,
// account.credits_low, batch.finished, and any type added later. It is
// stored once, as the exact body every attempt sends, and delivered like a
// job's events, through the one delivery path (endpoint policy, delivery
// log, recovery): Delivery.MessageID names it.
type Message struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	// Body is the whole event as POSTed: {"type","timestamp","data"}.
	Body json.RawMessage `json:"body"`
	// BatchID names the batch of a batch.finished message, whose callback
	// delivery state is kept on the batch.
	BatchID string `json:"batch_id,omitempty"`
	// CallbackURL is where the message goes besides hooks (a batch's
	// callback_url); never shown back, as it may carry a signature.
	CallbackURL string `json:"callback_url,omitempty"`
}

// Event types that are not a job's.
const (
	EventHookDisabled = "hook.disabled"
	EventHookTest     = "hook.test"
	EventCreditsLow   = "account.credits_low"
)

// NewMessage renders an event of type typ with data for owner.
func NewMessage(id, owner, typ string, at time.Time, data any) (*Message, error) {
	body, err := json.Marshal(struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      any       `json:"data"`
	}{typ, at.UTC(), data})
	if err != nil {
		return nil, err
	}
	return &Message{ID: id, Owner: owner, Type: typ, CreatedAt: at.UTC(), Body: body}, nil
}

// MessageDeliveryID is the webhook-id of a message's delivery to one hook.
func MessageDeliveryID(msgID, hookID string) string { return msgID + "_" + hookID }

// DeliveryFilter selects a page of an owner's deliveries, newest first.
type DeliveryFilter struct {
	Status DeliveryStatus // "" for all
	HookID string         // "" for all
	// Since keeps deliveries first attempted at or after it (zero: all).
	Since  time.Time
	Limit  int    // 1..100
	Cursor string // NextCursor of the previous page
}

// DeliveryPage is one page of an owner's deliveries.
type DeliveryPage struct {
	Deliveries []*DeliveryRecord `json:"deliveries"`
	NextCursor string            `json:"next_cursor,omitempty"`
}
