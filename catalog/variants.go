package catalog

import (
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The catalog's part of responsive sets (connector.VariantSet): Make Image
// Sizes, one action that sends one image with up to ten variants (POST
// /v1/jobs/variants: POST /v1/jobs with "variants" required), waits, and
// answers the set with each variant's job (line items), a srcset and a
// <picture> snippet.

// VariantSetPath is POST /v1/jobs with variants as a path of its own:
// Power Automate's swagger (and OpenAPI) key operations by method and path.
const VariantSetPath = "/v1/jobs/variants"

// variantFields are the fields of one variant: its id and its own resize,
// convert and target, as text the API reads in JSON.
func variantFields() []Field {
	return []Field{
		{Key: "id", Label: "Variant ID", Type: FieldString, Required: true,
			Help: "Names the size in the results and its file (photo-sm.webp): a-z, 0-9, - and _.", Example: "sm"},
		{Key: "resize", Label: "Resize", Type: FieldString, Help: "320x (width), x480 (height) or 400x400 (a box).", Example: "320x"},
		{Key: "convert", Label: "Convert To", Type: FieldString, Choices: []string{"webp", "avif", "jpeg", "png"},
			Help: "The size's format; empty keeps the image's own."},
		{Key: "target", Label: "Max Size", Type: FieldString, Help: "At most this many bytes: 100000, 100KB or 200KiB.", Example: "100KB"},
	}
}

// variantSetInputs are Make Image Sizes' inputs: the image (URL, base64 or
// a file), its name, metadata and dedupe, said briefly (Compress Image
// says them at length), and the variants.
func variantSetInputs() []Field {
	brief := map[string]string{
		"image_url":    "URL of the PNG, JPEG, WebP or AVIF image (up to 10 MiB).",
		"image_base64": "The image base64-encoded, when it has no URL.",
		"filename":     "Name the sizes' files are named after (photo.jpg: photo-sm.webp).",
		"metadata":     "Your own key/value pairs, echoed back on the set and each size.",
		"dedupe":       "false makes every size anew, even one this key made before.",
	}
	var out []Field
	for _, f := range jobRequestFields() {
		if IsTransformField(f.Key) { // each variant's own
			continue
		}
		if b, ok := brief[f.Key]; ok {
			f.Help = b
		}
		out = append(out, f)
	}
	return append(out, Field{Key: "variants", Label: "Sizes", Type: FieldList, Required: true, Fields: variantFields(),
		Help: "1 to 10 sizes to make, one credit each."})
}

// variantSetOutputs are the fields of a set as Make Image Sizes answers it.
func variantSetOutputs() []OutputField {
	var out []OutputField
	for _, o := range batchOutputs() {
		switch o.Key {
		case "id":
			o.Label, o.Help = "Set ID", "Identifier of the set; GET /v1/batches/{id} answers it again."
		case "counts.total":
			o.Label, o.Help = "Sizes", "How many variants the set has."
		case "jobs":
			o.Label, o.Help, o.Fields = "Variants", "Every variant's job in the order given, each with variant (its id), result.file_url, result.width and result.height.", variantJobOutputs()
		}
		out = append(out, o)
	}
	return append(out,
		OutputField{Key: "srcset", Label: "Srcset", Type: FieldString, Help: "The completed variants of the fallback type as an HTML srcset: \"url 320w, url 800w\". The URLs are signed and expire with the results."},
		OutputField{Key: "picture", Label: "Picture HTML", Type: FieldString, Help: "A <picture> element: an AVIF and a WebP <source> when such variants were asked, and an <img> of the JPEG or PNG ones."})
}

// variantJobOutputs are a set's job fields: a batch job's, with its
// variant id.
func variantJobOutputs() []OutputField {
	return append([]OutputField{{Key: "variant", Label: "Variant ID", Type: FieldString, Help: "The variant this job made."}}, batchJobOutputs()...)
}

// compressVariantsOperation is the Make Image Sizes action.
func compressVariantsOperation() Operation {
	return Operation{Key: "compress_variants", Noun: "Image", Label: "Make Image Sizes",
		Description: "Makes up to 10 sizes (and formats) of one image, each compressed, with a srcset and a <picture> snippet.",
		Help: "The image is fetched and decoded once for every size. Each size is a job: one credit each (none for a size made before), all made or none. " +
			"Waits up to 25 seconds; a set still running then comes back running: follow it with Get Job per size.",
		Kind: KindAction, Method: "POST", Path: VariantSetPath,
		Query:  map[string]string{"wait": "25", "include": connector.IncludeJobs},
		Inputs: variantSetInputs(), Outputs: variantSetOutputs(), Sample: SampleVariantSet(),
		Upload: ImageUpload()}
}

// SampleVariantSet is a finished set of three sizes of one photo: a WebP
// and two JPEGs.
func SampleVariantSet() any {
	base := SampleJob()
	sizes := []struct {
		id, mime      string
		width, height int
		size          int64
	}{{"sm", "image/webp", 320, 480, 14210}, {"md", "image/jpeg", 800, 1200, 61890}, {"lg", "image/jpeg", 1600, 2400, 197400}}
	id := SampleBatch().ID // its links are the sample batch's
	jobs := make([]*connector.Job, len(sizes))
	for i, s := range sizes {
		j := *base
		r := *base.Result
		idx := i
		j.ID = strings.Replace(base.ID, "5c2b", "5c3"+string(rune('0'+i)), 1)
		j.BatchID, j.BatchIndex, j.Variant, j.Callback = id, &idx, s.id, nil
		j.Transform = connector.Transform{Resize: &connector.Resize{Method: connector.ResizeScale, Width: s.width}}
		stem := strings.TrimSuffix(r.Filename, ".jpg")
		r.Filename = stem + "-" + s.id + connector.ExtensionOf(s.mime)
		r.MIMEType, r.Type, r.Width, r.Height, r.CompressedSize = s.mime, s.mime, s.width, s.height, s.size
		r.FileURL = "https://imgflow.example.com/v1/jobs/" + j.ID + "/file?token=eyJleHAiOjE3OTM4NzQ2MDB9.c2V0X3Zhcg"
		j.Result = &r
		jobs[i] = &j
	}
	finished := sampleTime.Add(3100 * time.Millisecond)
	b := &connector.Batch{ID: id, Status: connector.BatchFinished, Counts: connector.BatchCounts{Total: 3, Completed: 3},
		CreatedAt: sampleTime, FinishedAt: &finished, Metadata: base.Metadata,
		Links: &connector.BatchLinks{Self: "https://imgflow.example.com/v1/batches/" + id,
			Jobs:    "https://imgflow.example.com/v1/batches/" + id + "/jobs",
			Archive: "https://imgflow.example.com/v1/batches/" + id + "/archive?token=eyJleHAiOjE3OTM4NzQ2MDB9.U2V0X2FyYw"}}
	for _, j := range jobs {
		b.SavedBytes += j.Result.OriginalSize - j.Result.CompressedSize
	}
	return &connector.VariantSetAnswer{VariantSet: connector.NewVariantSet(b, jobs), Jobs: jobs}
}
