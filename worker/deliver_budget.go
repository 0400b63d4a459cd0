package worker

import (
	"context"
	"time"
)

// The outbound budget (connector/budget.go): a free job's deliveries (a
// deduplicated repeat's callback and hooks) each spend one of its key's
// FreeDeliveriesPerMinute before the endpoint's own policy is asked. A
// delivery beyond the budget is put off until its turn, as the endpoint's
// rate puts one off, and keeps the turn it reserved; it is never dropped.
// An owner's redelivery is not counted here (the API limits those).

// maxBudgetWait bounds how far ahead a delivery reserves its key's turn;
// one further off is put off this long and asks again.
const maxBudgetWait = time.Hour

// spendBudget spends the key's budget for a free job's delivery: true when
// the attempt may go on now (after a short wait); false when it was put
// off.
func (w *Worker) spendBudget(ctx context.Context, r *deliveryRun) (bool, error) {
	job := r.subject.job
	perMinute := w.cfg.FreeDeliveriesPerMinute
	if job == nil || !job.Free() || perMinute <= 0 || r.d.Redeliver || r.d.BudgetTaken {
		return true, nil
	}
	wait, reserved, err := w.cfg.Budget.SpendOutbound(ctx, job.Owner, perMinute, maxBudgetWait)
	if err != nil {
		return false, err
	}
	if reserved && wait <= maxInlineWait {
		return true, sleep(ctx, wait)
	}
	if !reserved {
		wait = maxBudgetWait // its turn is further off: ask again then
	}
	r.d.BudgetTaken = reserved
	r.log.Info("free job's delivery put off by its key's outbound budget", "wait", wait, "per_minute", perMinute)
	return false, w.putOff(ctx, r, wait, false)
}
