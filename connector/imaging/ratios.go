package imaging

import (
	"sync"
)

// Ratios predicts what the compression API does to a candidate: it
// re-encodes every image (palette quantization for PNG, a fixed quality
// for JPEG, WebP and AVIF) and answers with the smaller of its encoding
// and what it was sent. Learnt per output type from its answers, the
// ratio lets a fit search aim above the budget by what the call will take
// off, so the delivered file uses the budget; an answer still over it is
// shrunk locally. The zero value is ready; it is safe for concurrent use.
type Ratios struct {
	mu sync.Mutex
	r  map[string]float64
}

// ratioLearning is how much one answer moves the estimate.
const ratioLearning = 0.3

// minRatio bounds the estimate: an aim far above the budget risks a
// local shrink of the answer, which costs more encodes than it saves.
const minRatio = 0.6

// ratioMargin keeps the aim a little under the prediction: an answer just
// over the budget is shrunk locally, at a quality cost.
const ratioMargin = 0.03

// Aim is the candidate size to aim at for a budget of maxBytes in
// mimeType.
func (r *Ratios) Aim(mimeType string, maxBytes int64) int64 {
	r.mu.Lock()
	ratio, ok := r.r[mimeType]
	r.mu.Unlock()
	if !ok {
		return maxBytes
	}
	return int64(float64(maxBytes) / min(1, ratio+ratioMargin))
}

// Learn takes one answer: sent bytes went to the API, answered came back.
func (r *Ratios) Learn(mimeType string, sent, answered int64) {
	if sent <= 0 || answered <= 0 {
		return
	}
	x := min(1, max(minRatio, float64(answered)/float64(sent)))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.r == nil {
		r.r = map[string]float64{}
	}
	if old, ok := r.r[mimeType]; ok {
		x = old + ratioLearning*(x-old)
	}
	r.r[mimeType] = x
}

// Ratio is the current estimate for mimeType (1 when none yet).
func (r *Ratios) Ratio(mimeType string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.r[mimeType]; ok {
		return v
	}
	return 1
}
