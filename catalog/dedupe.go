package catalog

import (
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The catalog's part of content dedupe and the dry run
// (connector/dedupe.go): the dedupe option on every job-creating action, and
// the Check Image action.

// dedupeField is the job request's dedupe option.
func dedupeField() Field {
	return Field{Key: "dedupe", Label: "Reuse Earlier Result", Type: FieldBoolean, Default: "true",
		Help: "When this key compressed the same image (same bytes, whatever its URL) before and its result is still stored, return that result as a new job at no credit (deduplicated_from names the earlier job). Set to false to compress and be charged again."}
}

// SampleImageCheck is a realistic dry run: the image was compressed before.
func SampleImageCheck() *connector.ImageCheck {
	return &connector.ImageCheck{WouldCharge: 0, DeduplicatedFrom: SampleJob().ID, CreditsRemaining: 498,
		Input: connector.ImageCheckInput{Type: "image/jpeg", Size: 2483114, Width: 4032, Height: 3024,
			SHA256: "9f2c6d0e4b1a7c3e5d8f0a2b4c6e8d0f1a3b5c7d9e0f2a4b6c8d0e1f3a5b7c9d"},
		Output: &connector.ImageCheckOutput{Type: "image/jpeg", Width: 1600, Height: 1200}}
}

// SampleDeduplicatedJob is a realistic job completed from an earlier
// job's result: its own id and file, no upstream call, no charge.
func SampleDeduplicatedJob() *connector.Job {
	j := SampleJob()
	j.ID = "01937a61-2b3c-7d4e-8f50-6a7b8c9d0e1f"
	j.CreatedAt = j.CreatedAt.Add(time.Hour)
	j.UpdatedAt = j.CreatedAt.Add(90 * time.Millisecond)
	j.StartedAt = timep(j.CreatedAt.Add(40 * time.Millisecond))
	j.FinishedAt = timep(j.CreatedAt.Add(90 * time.Millisecond))
	j.Result.FileURL = "https://imgflow.example.com/v1/jobs/" + j.ID + "/file?token=eyJleHAiOjE3OTM4NzgyMDB9.TmV3X3Rva2Vu"
	j.UpstreamCalls = 0
	j.DeduplicatedFrom = SampleJob().ID
	return j
}

// DryRunPath is POST /v1/jobs?dry_run=1 as a path of its own.
const DryRunPath = "/v1/jobs/dry-run"

// checkImageOperation is the Check Image action: the compress request as a
// dry run.
func checkImageOperation() Operation {
	var inputs []Field
	for _, f := range jobRequestFields() {
		if f.Key == "image_url" || f.Key == "image_base64" || f.Key == "dedupe" || IsTransformField(f.Key) {
			inputs = append(inputs, f)
		}
	}
	return Operation{Key: "check_image", Noun: "Image", Label: "Check Image",
		Description: "Checks an image as Compress Image would and tells what compressing it would cost, without compressing or charging anything.",
		Help:        "Fetches or decodes the image and checks its type, size, dimensions and that the file is whole. would_charge is 0 when this key compressed the same image before and its result is still stored (deduplicated_from names that job), else 1. An image Compress Image would refuse gets the same error here.",
		// POST /v1/jobs?dry_run=1 under a path of its own: Power Automate's
		// swagger (and OpenAPI) key operations by method and path.
		Kind: KindAction, Method: "POST", Path: DryRunPath,
		Inputs: inputs,
		Outputs: []OutputField{
			{Key: "would_charge", Label: "Would Charge (credits)", Type: FieldInteger, Help: "Credits compressing this image would cost now: 0 (an earlier result would be reused) or 1."},
			{Key: "deduplicated_from", Label: "Deduplicated From", Type: FieldString, Help: "The earlier job whose result would be reused, when would_charge is 0."},
			{Key: "credits_remaining", Label: "Credits Remaining", Type: FieldInteger, Help: "Credits left on the account now."},
			{Key: "input.type", Label: "Image Type", Type: FieldString, Help: "Type sniffed from the bytes, such as image/jpeg."},
			{Key: "input.size", Label: "Image Size (bytes)", Type: FieldInteger, Help: "Size of the image in bytes."},
			{Key: "input.width", Label: "Width (pixels)", Type: FieldInteger, Help: "Width of the image in pixels, as stored."},
			{Key: "input.height", Label: "Height (pixels)", Type: FieldInteger, Help: "Height of the image in pixels, as stored."},
			{Key: "input.sha256", Label: "Image SHA-256", Type: FieldString, Help: "SHA-256 of the bytes (hex)."},
			{Key: "output.type", Label: "Result Type", Type: FieldString, Help: "The type the result would have, when the job would resize or convert the image."},
			{Key: "output.width", Label: "Result Width", Type: FieldInteger, Help: "The result's width in pixels, when the job would resize or convert the image."},
			{Key: "output.height", Label: "Result Height", Type: FieldInteger, Help: "The result's height in pixels, when the job would resize or convert the image."},
		},
		Sample: SampleImageCheck()}
}
