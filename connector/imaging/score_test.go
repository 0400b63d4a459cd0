package imaging

import (
	"context"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images/synth"
)

func scoreGoal(maxBytes int64, resize bool, minScore float64) (connector.Transform, FitGoal) {
	t := connector.Transform{Target: &connector.Target{MaxBytes: maxBytes, AllowResize: &resize, MinScore: &minScore}}
	return t, FitGoal{MaxBytes: maxBytes, Aim: maxBytes, AllowResize: resize, MinScore: &minScore}
}

func TestFitWithMinScoreReachesTheFloorUnderTheBudget(t *testing.T) {
	needVips(t)
	data := encodeJPEG(t, synth.Photo(4, 1200, 900), 95)
	tr, goal := scoreGoal(int64(len(data))/3, false, 60)
	res, fit, err := FitContext(context.Background(), data, tr, goal)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(res.Data)) > goal.MaxBytes || !fit.Scored || fit.Score < 60 {
		t.Fatalf("%d bytes (budget %d), score %.2f (scored %t); want within the budget, score ≥ 60", len(res.Data), goal.MaxBytes, fit.Score, fit.Scored)
	}
	// The score told is the file's.
	again, err := Score(context.Background(), data, tr, res.Data)
	if err != nil || again < 60 {
		t.Fatalf("Score of the result = %.2f, %v; want ≥ 60", again, err)
	}
	t.Logf("%d of %d bytes, q%d, score %.2f (again %.2f), %d encodes", len(res.Data), goal.MaxBytes, fit.Quality, fit.Score, again, fit.Encodes)
}

func TestFitWithAnUnreachableScoreSaysTheBestReached(t *testing.T) {
	needVips(t)
	data := encodeJPEG(t, synth.Photo(5, 800, 600), 95)
	tr, goal := scoreGoal(int64(len(data))/8, false, 95)
	_, fit, err := FitContext(context.Background(), data, tr, goal)
	e := connector.AsError(err)
	if e == nil || e.Code != connector.ETARGETUNREACHABLE || len(e.Details) == 0 || e.Details[0].Field != "target.min_score" {
		t.Fatalf("got %v; want target_unreachable naming target.min_score", err)
	}
	if fit == nil || fit.BestScore >= 95 {
		t.Fatalf("best score %v; want one under 95", fit)
	}
	t.Log(e.Message)
	reach, err := Reachable(data, tr)
	if err != nil || reach.OK || !reach.Scored || reach.Score >= 95 {
		t.Fatalf("Reachable = %+v, %v; want unreachable with the best score", reach, err)
	}
}

func TestFitWithMinScoreResizesRatherThanDropQuality(t *testing.T) {
	needVips(t)
	data := encodeJPEG(t, synth.Photo(6, 1600, 1200), 95)
	budget := int64(len(data)) / 10
	// Without a floor the search keeps the size and lowers the quality.
	_, plain, err := FitContext(context.Background(), data, connector.Transform{Target: &connector.Target{MaxBytes: budget}},
		FitGoal{MaxBytes: budget, Aim: budget, AllowResize: true})
	if err != nil {
		t.Fatal(err)
	}
	plainScore := 0.0
	{
		tr, _ := scoreGoal(budget, true, 0)
		res, _, err := FitContext(context.Background(), data, tr, FitGoal{MaxBytes: budget, Aim: budget, AllowResize: true})
		if err != nil {
			t.Fatal(err)
		}
		if plainScore, err = Score(context.Background(), data, tr, res.Data); err != nil {
			t.Fatal(err)
		}
	}
	floor := plainScore + 8
	tr, goal := scoreGoal(budget, true, floor)
	res, fit, err := FitContext(context.Background(), data, tr, goal)
	if err != nil {
		t.Fatalf("floor %.1f: %v", floor, err)
	}
	t.Logf("without a floor: %d×%d q%d score %.1f; floor %.1f: %d×%d q%d score %.1f, %d bytes of %d",
		plain.Width, plain.Height, plain.Quality, plainScore, floor, fit.Width, fit.Height, fit.Quality, fit.Score, len(res.Data), budget)
	if fit.Score < floor || int64(len(res.Data)) > budget || fit.Width >= plain.Width {
		t.Fatalf("want a smaller image scoring ≥ %.1f within %d bytes", floor, budget)
	}
}
