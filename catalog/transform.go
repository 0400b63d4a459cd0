package catalog

import "github.com/imgflow/imgflow/connector"

// The transform's fields (connector/transform.go) as every platform shows
// them: flat text, number and choice fields that forms fill in, the same
// names the API takes in JSON, multipart fields and the raw-body query.

// transformFields are the inputs of a job's resize, convert and preserve.
func transformFields() []Field {
	return []Field{
		{Key: "resize", Label: "Resize", Type: FieldString,
			Help:    "New size, in pixels: 1600x (1600 wide), x900 (900 high) or 400x400 (a box; see Resize Method). Never enlarges unless Enlarge is set. At most 16384 a side. Free: the job still costs one credit.",
			Example: "1600x"},
		{Key: "resize_method", Label: "Resize Method", Type: FieldString, Choices: []string{connector.ResizeScale, connector.ResizeFit, connector.ResizeCover},
			Help: "scale: one side given, proportions kept; fit: inside the box, proportions kept; cover: fills the box exactly, cropped around the most interesting part of the image. Defaults to scale for one side, fit for a box."},
		{Key: "resize_enlarge", Label: "Enlarge", Type: FieldBoolean, Default: "false",
			Help: "Allow the image to get bigger than it is. Off by default: a smaller image keeps its size."},
		{Key: "convert", Label: "Convert To", Type: FieldString, Choices: []string{"webp", "avif", "jpeg", "png"},
			Help: "The result's format: webp or avif for the web, jpeg for email. Leave empty to keep the image's own format (HEIC photos become JPEG)."},
		{Key: "background", Label: "Background", Type: FieldString,
			Help:    "Colour (#rrggbb) that fills transparency when the new format has none (JPEG). Defaults to white.",
			Example: "#ffffff"},
		{Key: "preserve", Label: "Keep Metadata", Type: FieldString,
			Help:    "Metadata to keep, comma-separated: copyright (copyright and artist), creation (date taken), location (GPS). By default the result carries none. Orientation is always applied to the pixels.",
			Example: "copyright,creation"},
		{Key: "target_max_bytes", Label: "Max File Size", Type: FieldString,
			Help:    "Fit the result under this size, for the same one credit: 100KB (100,000 bytes), 1.5MB, 200KiB (204,800 bytes) or a number of bytes. Quality is lowered first, then the dimensions (see Allow Resize). A size the image cannot reach fails the job uncharged.",
			Example: "100KB"},
		{Key: "target_allow_resize", Label: "Allow Resize to Fit", Type: FieldBoolean, Default: "true",
			Help: "With Max File Size: let the image get smaller in pixels when lower quality alone cannot fit it. Off: quality only, and an image that cannot fit fails uncharged."},
		{Key: "target_min_score", Label: "Min Visual Quality", Type: FieldNumber,
			Help:    "With Max File Size: the lowest SSIMULACRA2 score (0–100) the result may have against the image it encodes: 90 looks lossless, 70 is high quality for the web, 50 medium. The image gets smaller in pixels rather than worse (when Allow Resize is on); a size and score the image cannot reach together fail the job uncharged, with the best score reached.",
			Example: "70"},
	}
}

// IsTransformField reports whether key is one of the transform's fields
// (resize, convert, preserve and their details).
func IsTransformField(key string) bool {
	for _, f := range transformFields() {
		if f.Key == key {
			return true
		}
	}
	return false
}

// transformOutputs describe what a transformed job tells of its input and
// result.
func transformOutputs() []OutputField {
	return []OutputField{
		{Key: "input.type", Label: "Input Type", Type: FieldString, Help: "The original's type, such as image/heic, when the job resized or converted it."},
		{Key: "input.width", Label: "Input Width", Type: FieldInteger, Help: "The original's width in pixels (orientation applied), when the job resized or converted it."},
		{Key: "input.height", Label: "Input Height", Type: FieldInteger, Help: "The original's height in pixels (orientation applied), when the job resized or converted it."},
		{Key: "result.type", Label: "Result Type", Type: FieldString, Help: "The result's type, such as image/webp, when the job resized or converted the image."},
		{Key: "result.width", Label: "Result Width", Type: FieldInteger, Help: "The result's width in pixels, when the job resized or converted the image."},
		{Key: "result.height", Label: "Result Height", Type: FieldInteger, Help: "The result's height in pixels, when the job resized or converted the image."},
		{Key: "result.quality", Label: "Result Quality", Type: FieldInteger, Help: "The encoder quality (1–100) chosen to fit Max File Size; absent when the image went losslessly or without a size."},
		{Key: "result.score", Label: "Result Visual Quality", Type: FieldNumber, Help: "The result's SSIMULACRA2 score (0–100) against the image it encodes, when Min Visual Quality was asked."},
	}
}
