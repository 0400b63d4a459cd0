package imaging

import (
	"bytes"

	"github.com/imgflow/imgflow/connector/inspect"
)

// Transforms decode strictly: a truncated or damaged image fails the job
// with unsupported_format before the compression API is called (so
// nothing is charged), whatever the options, instead of coming out as a
// half-grey picture. Two checks, both before any pixel is written:
//
//   - whole checks the container as the dry run does (inspect: PNG chunks
//     and their checksums, JPEG segments up to the end marker, WebP and
//     AVIF sizes), which catches a cut file cheaply;
//   - libvips decodes with fail_on=truncated (vips.c), which stops at
//     the point where the pixel data ends early.
//
// HEIC/HEIF, which inspect does not read, relies on libvips' check alone.
func whole(data []byte, inputType string) error {
	if IsHEIF(inputType) {
		return nil
	}
	_, err := inspect.Image(bytes.NewReader(data))
	return err
}
