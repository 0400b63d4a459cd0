package definitions

import (
	"fmt"

	"github.com/imgflow/imgflow/connector"
)

// recentItems lists real items shaped as the trigger's deliveries' data:
// recent finished jobs, recent finished batches, or the account's balance
// as a credits-low event would carry it.
func (z zapierOp) recentItems() obj {
	switch z.op.Sample.(type) {
	case *connector.Batch:
		return zapierSource(
			"const response = await z.request({ method: 'GET', url: "+jsString(z.base+"/v1/batches")+", params: { limit: 100 } });",
			"const batches = (response.data && response.data.batches) || [];",
			"return batches.filter((batch) => batch.status === "+jsString(string(connector.BatchFinished))+");",
		)
	case *connector.CreditsLowData:
		return zapierSource(
			"const response = await z.request({ method: 'GET', url: "+jsString(z.base+"/v1/account")+" });",
			"const threshold = Number(bundle.inputData.threshold || "+fmt.Sprint(connector.DefaultCreditsThreshold)+");",
			"return [{ credits_remaining: response.data.credits_remaining, threshold, job_id: null }];",
		)
	}
	return z.finishedJobs("{ 'job.completed': 'completed', 'job.failed': 'failed' }[bundle.inputData.event] || ''")
}
