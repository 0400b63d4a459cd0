package app

import (
	"context"

	"github.com/imgflow/imgflow/connector"
)

// A responsive set (connector.VariantSet) is made as a batch whose items
// are its variants: all of them or none, one job each, so each is charged,
// retried and deduplicated on its own. The source is stored once, with the
// first variant: the worker's set step (worker/variantset.go) fetches or
// reads it once and decodes it once for every variant.

// SetRequest asks for a responsive set: one image, its variants.
type SetRequest struct {
	Owner          string
	Key            string
	IdempotencyKey string
	Fingerprint    string
	// Input is the source and the options every variant shares (filename,
	// metadata, dedupe); its Transform is not used: each variant has its
	// own.
	Input       Input
	Variants    []connector.Variant
	CallbackURL string
}

// CreateSet admits and makes a set, or, for a repeated Idempotency-Key
// with the same request, returns the set made the first time (replay
// true). Its Idempotency-Keys are those of batches.
func (s *Maker) CreateSet(ctx context.Context, r *SetRequest) (*connector.Batch, bool, error) {
	br := &BatchRequest{Owner: r.Owner, Key: r.Key, IdempotencyKey: r.IdempotencyKey, Fingerprint: r.Fingerprint,
		Items: make([]Input, len(r.Variants)), CallbackURL: r.CallbackURL, Metadata: r.Input.Metadata,
		VariantIDs: make([]string, len(r.Variants))}
	for i, v := range r.Variants {
		item := r.Input
		item.Transform = v.Transform.Clone()
		item.Variant = v.ID
		if i > 0 {
			item.Image = nil // the source is the first variant's input
		}
		br.Items[i] = item
		br.VariantIDs[i] = v.ID
	}
	return s.CreateBatch(ctx, br)
}
