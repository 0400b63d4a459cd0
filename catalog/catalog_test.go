package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// encode is v as the API (or a schema's reader) sees it: JSON.
func encode(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T does not encode: %v", v, err)
	}
	return b
}

// decode is v as a JSON client reads it: maps, slices and float64s.
func decode(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(encode(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCatalogOffersTheIssuedActionsAndTriggers(t *testing.T) {
	c := Default()
	want := map[string]OperationKind{
		"compress_image":          KindAction,
		"compress_image_callback": KindCallbackAction,
		"get_job":                 KindAction,
		"check_account":           KindAction,
		"check_image":             KindAction,
		"compress_many":           KindAction,
		"compress_variants":       KindAction,
		"job_finished":            KindHookTrigger,
		"job_finished_polling":    KindPollingTrigger,
		"credits_low":             KindHookTrigger,
		"batch_finished":          KindHookTrigger,
	}
	if got := len(c.Operations()); got != len(want) {
		t.Errorf("catalog has %d operations, want %d", got, len(want))
	}
	for key, kind := range want {
		op := c.Operation(key)
		if op == nil {
			t.Errorf("operation %q missing", key)
			continue
		}
		if op.Kind != kind {
			t.Errorf("%s: kind %q, want %q", key, op.Kind, kind)
		}
	}
	if c.Auth.TestPath != "/v1/account" || c.Auth.Header != "X-API-Key" {
		t.Errorf("auth tests %s with header %s, want /v1/account with X-API-Key", c.Auth.TestPath, c.Auth.Header)
	}
}

func TestDeliveryOperationsAreListedForPeopleNotOfferedToFlows(t *testing.T) {
	c := Default()
	for key, path := range map[string]string{
		"list_deliveries": "/v1/jobs/{id}/deliveries",
		"redeliver":       "/v1/jobs/{id}/deliveries/{delivery_id}/redeliver",
	} {
		op := c.Operation(key)
		if op == nil || op.Path != path {
			t.Errorf("%s: expected an operation on %s, got %+v", key, path, op)
		}
		for _, flowOp := range c.Operations() {
			if flowOp.Key == key {
				t.Errorf("%s: expected it out of the platforms' actions and triggers", key)
			}
		}
	}
}

func TestCompressImageWaitsUnderZapiersThirtySeconds(t *testing.T) {
	op := Default().Operation("compress_image")
	if op.Query["wait"] != "25" {
		t.Errorf("compress_image waits %q seconds, want 25", op.Query["wait"])
	}
}

func TestEveryFieldHasKeyLabelHelpAndType(t *testing.T) {
	c := Default()
	check := func(where string, f Field) {
		if f.Key == "" || f.Label == "" || f.Help == "" || f.Type == "" {
			t.Errorf("%s: input %+v lacks key, label, help or type", where, f)
		}
		if f.Default != "" && len(f.Choices) > 0 && !contains(f.Choices, f.Default) {
			t.Errorf("%s.%s: default %q is not one of %v", where, f.Key, f.Default, f.Choices)
		}
	}
	for _, f := range c.Auth.Fields {
		check("auth", f)
	}
	for _, op := range append(c.Operations(), c.Manage...) {
		if op.Label == "" || op.Description == "" || op.Help == "" || op.Noun == "" {
			t.Errorf("%s lacks label, description, help or noun", op.Key)
		}
		for _, f := range op.Inputs {
			check(op.Key, f)
		}
		for _, o := range op.Outputs {
			if o.Label == "" || o.Help == "" || o.Type == "" {
				t.Errorf("%s: output %q lacks label, help or type", op.Key, o.Key)
			}
		}
	}
}

func TestEveryOutputAppearsInARealisticSample(t *testing.T) {
	c := Default()
	for _, op := range append(c.Operations(), c.Manage...) {
		if op.Sample == nil {
			t.Errorf("%s has no sample", op.Key)
			continue
		}
		samples := []any{decode(t, op.Sample)}
		if _, isJob := op.Sample.(*connector.Job); isJob {
			samples = append(samples, decode(t, SampleFailedJob()), decode(t, SampleDeduplicatedJob()))
		}
		for _, o := range op.Outputs {
			found := false
			for _, s := range samples {
				if _, ok := OutputValue(s, o.Key); ok {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: output %q is in no sample", op.Key, o.Key)
			}
		}
	}
}

func TestSampleJobShowsASmallerFileAndOneCreditSpent(t *testing.T) {
	j := SampleJob()
	if j.Result.CompressedSize >= j.Result.OriginalSize {
		t.Errorf("sample compressed %d bytes to %d: not smaller", j.Result.OriginalSize, j.Result.CompressedSize)
	}
	if got, want := *j.Result.CreditsRemaining, SampleAccount().CreditsRemaining-1; got != want {
		t.Errorf("sample job leaves %d credits, want %d (account sample minus one)", got, want)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Every operation that answers jobs hands the compressed file on as the
// platform's own file, and the compress actions take one.
func TestJobOperationsCarryTheCompressedFile(t *testing.T) {
	c := Default()
	for _, op := range c.Operations() {
		_, returnsJobs := op.Sample.(*connector.Job)
		if returnsJobs != (op.File != nil) {
			t.Errorf("%s: returns jobs %v, file output %v; want both or neither", op.Key, returnsJobs, op.File != nil)
		}
		if op.File != nil {
			decoded := decode(t, op.Sample)
			for _, key := range []string{op.File.IDKey, op.File.NameKey, op.File.TypeKey, op.File.SizeKey} {
				if _, ok := OutputValue(decoded, key); !ok {
					t.Errorf("%s: file output names %q, which the job does not have", op.Key, key)
				}
			}
			if !strings.Contains(op.File.Path, "{"+op.File.IDKey+"}") {
				t.Errorf("%s: file path %q does not take the job's %s", op.Key, op.File.Path, op.File.IDKey)
			}
		}
		takesImage := false
		for _, f := range op.Inputs {
			takesImage = takesImage || f.Key == "image_url"
		}
		if returnsJobs && takesImage != (op.Upload != nil) {
			t.Errorf("%s: takes an image %v, file input %v; want both or neither", op.Key, takesImage, op.Upload != nil)
		}
	}
}
