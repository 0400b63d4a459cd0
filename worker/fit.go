package worker

import (
	"bytes"
	"context"
	"math"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
)

// A job with a target (connector.Target) is fitted in the transform step:
// the search aims the candidate at the budget plus what the compression
// API is predicted to take off (w.fitRatios, learnt from its answers), the
// one call is made, and an answer still over the budget is shrunk here,
// free. The delivered file is never over the budget. With a min_score the
// candidate aims at the budget itself and reaches the score; an answer
// that scores under it is set aside for the candidate, so the delivered
// file never scores under it either.

// fit makes the candidate for t's target; meta is the size of the
// metadata the job writes back into the answer, kept out of the budget.
func (w *Worker) fit(ctx context.Context, data []byte, inputType string, t connector.Transform, meta int64) (*imaging.Result, *imaging.Fit, error) {
	budget := max(1, t.Target.MaxBytes-meta)
	outType := imaging.OutputType(inputType, t)
	goal := imaging.FitGoal{MaxBytes: budget, Aim: w.fitRatios.Aim(outType, budget), AllowResize: t.Target.Resizes(), MinScore: t.Target.MinScore}
	if goal.MinScore != nil {
		goal.Aim = budget // the candidate may be what is delivered
	}
	return imaging.FitContext(ctx, data, t, goal)
}

// fitAnswer keeps the answer of a fitted image within its target: the
// ratio learnt, the answer shrunk locally when over, its score checked
// when asked, and the result told how it was made. The answer is charged
// already; nothing here calls again.
func (w *Worker) fitAnswer(ctx context.Context, a *run, img *image, c *connector.Compressed) {
	if img.fitted == nil || a.job.Transform.Target == nil {
		return
	}
	target := a.job.Transform.Target
	w.fitRatios.Learn(img.mimeType, img.size, c.Data.Size())
	c.Quality, c.Colours = img.fitted.Quality, img.fitted.Colours
	if c.CompressedSize > target.MaxBytes || c.Data.Size() > target.MaxBytes {
		w.shrinkAnswer(ctx, a, img, c)
	}
	if target.MinScore != nil {
		w.scoreAnswer(ctx, a, img, c, *target.MinScore)
	}
}

// shrinkAnswer re-encodes an answer over the budget, locally.
func (w *Worker) shrinkAnswer(ctx context.Context, a *run, img *image, c *connector.Compressed) {
	target := a.job.Transform.Target
	answer := readBytes(c.Data)
	out, fit, err := imaging.Shrink(ctx, answer, img.mimeType, target.MaxBytes, target.Resizes())
	if err != nil {
		// The answer does not shrink (an odd decode of it): the source
		// fitted straight to the budget, without the call's pass.
		var res *imaging.Result
		res, fit, err = imaging.FitContext(ctx, img.source, a.job.Transform,
			imaging.FitGoal{MaxBytes: target.MaxBytes, Aim: target.MaxBytes, AllowResize: target.Resizes()})
		if err != nil {
			a.log.Error("the answer is over the target and could not be shrunk", "err", err, "size", len(answer))
			return
		}
		out = res.Data
	}
	a.log.Debug("answer over the target, shrunk locally", "answer_size", len(answer), "size", len(out), "quality", fit.Quality)
	setAnswer(c, img, out, fit.Width, fit.Height)
	c.Quality, c.Colours = fit.Quality, fit.Colours
}

// scoreAnswer scores the file about to be delivered; under minScore, the
// fitted candidate (which reached it, within the budget) goes instead,
// with the metadata the job keeps.
func (w *Worker) scoreAnswer(ctx context.Context, a *run, img *image, c *connector.Compressed, minScore float64) {
	score, err := imaging.Score(ctx, img.source, a.job.Transform, readBytes(c.Data))
	if err == nil && score >= minScore {
		c.Score = roundedScore(score)
		return
	}
	out := img.candidate
	if len(img.metadata) > 0 {
		if withMeta, merr := imaging.WithMetadata(out, img.mimeType, img.metadata); merr == nil {
			out = withMeta
		}
	}
	a.log.Info("the answer scores under the target's min_score; the fitted candidate goes instead",
		"score", score, "err", err, "min_score", minScore, "candidate_score", img.fitted.Score, "size", len(out))
	setAnswer(c, img, out, img.fitted.Width, img.fitted.Height)
	c.Quality, c.Colours = img.fitted.Quality, img.fitted.Colours
	c.Score = roundedScore(img.fitted.Score)
}

// setAnswer makes out the delivered file, width×height (0: unchanged).
func setAnswer(c *connector.Compressed, img *image, out []byte, width, height int) {
	c.Data = bytes.NewReader(out)
	c.CompressedSize = int64(len(out))
	if c.OriginalSize > 0 {
		c.CompressionRatio = math.Round((1-float64(c.CompressedSize)/float64(c.OriginalSize))*10000) / 100
	}
	if width > 0 {
		c.Width, c.Height = width, height
		if img.shape != nil {
			img.shape.Width, img.shape.Height = width, height
		}
	}
}

// roundedScore is a score as results tell it: two decimals.
func roundedScore(s float64) *float64 {
	r := math.Floor(s*100) / 100 // down: a told score never overstates
	return &r
}
