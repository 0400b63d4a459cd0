package asynqext_test

import (
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/imgflow/imgflow/internal/asynqext"
)

// The Helm chart's KEDA scaler reads asynq's lists by name, in YAML that
// cannot import this package (and deploy/helm/chartcheck is a module of its
// own): the names its template prints for a queue must be Pending's and
// Active's.
func TestChartScalesOnThePendingAndActiveLists(t *testing.T) {
	const template = "../../deploy/helm/imgflow/templates/work-scaledobject.yaml"
	raw, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	lists := regexp.MustCompile(`range \$list := list "(\w+)" "(\w+)"`).FindSubmatch(raw)
	name := regexp.MustCompile(`listName: \{\{ printf "([^"]+)" \$q \$list`).FindSubmatch(raw)
	if lists == nil || name == nil {
		t.Fatalf("%s: no `range $list := list ...` or `listName: {{ printf ... $q $list`: update this test to the chart", template)
	}
	q := asynqext.QueueOf("imgflow")
	want := map[string]string{"pending": q.Pending(), "active": q.Active()}
	for _, list := range lists[1:] {
		// Helm's printf is Go's fmt.Sprintf.
		if got := fmt.Sprintf(string(name[1]), q.Name(), list); got != want[string(list)] {
			t.Errorf("%s: the scaler watches %q for the %s list; asynq's is %q", template, got, list, want[string(list)])
		}
	}
}
