package imaging

import (
	"errors"
	"fmt"

	"github.com/imgflow/imgflow/connector"
)

// Reading the metadata a job keeps is bounded: a small file's EXIF may
// declare tens of thousands of entries that all point at the same large
// value, so what counts is each entry and each byte referenced, every time
// it is referenced, not the size of the file. An image over any bound is
// refused (connector.EMETADATA) before anything is charged.
const (
	// MaxMetadataBlob is the largest EXIF or XMP block read from an image.
	MaxMetadataBlob = 1 << 20
	// MaxMetadataEntries is the most EXIF entries read, over all IFDs.
	MaxMetadataEntries = 4096
	// MaxMetadataReferenced is the most value bytes EXIF entries may
	// reference, each reference counted.
	MaxMetadataReferenced = 1 << 20
	// MaxKeptMetadata is the largest EXIF block a result carries: what one
	// JPEG APP1 segment holds after its "Exif\0\0" header, for every type,
	// so that kept metadata always fits the result it goes into.
	MaxKeptMetadata = 0xFFFF - 2 - 6
)

var errOverBudget = errors.New("metadata over budget")

// metadataBudget counts what one image's EXIF reading has used.
type metadataBudget struct {
	n, referenced int64
	why           string
}

func (b *metadataBudget) entries(n int) error {
	b.n += int64(n)
	if b.n > MaxMetadataEntries {
		b.why = fmt.Sprintf("its EXIF has over %d entries", MaxMetadataEntries)
		return errOverBudget
	}
	return nil
}

func (b *metadataBudget) bytes(n int64) error {
	b.referenced += n
	if b.referenced > MaxMetadataReferenced {
		b.why = fmt.Sprintf("its EXIF entries reference over %d bytes of values", MaxMetadataReferenced)
		return errOverBudget
	}
	return nil
}

// blobTooLarge is the error of a metadata block over MaxMetadataBlob.
type blobTooLarge struct {
	name string
	size int
}

func (e *blobTooLarge) Error() string {
	return fmt.Sprintf("its %s block is %d bytes, over the %d bytes read", e.name, e.size, MaxMetadataBlob)
}

func (e *blobTooLarge) Is(target error) bool { return target == errOverBudget }

// metadataError is the job's error for a failed metadata read: EMETADATA
// when over a bound, else the image is unreadable.
func metadataError(err error) error {
	if errors.Is(err, errOverBudget) {
		return tooMuchMetadata(err.Error())
	}
	return unreadable(err.Error())
}

func tooMuchMetadata(why string) error {
	return &connector.Error{Code: connector.EMETADATA,
		Message: "preserve: the image's metadata is too large to keep (" + why + "); leave preserve out, or strip the metadata first",
		Details: []connector.FieldError{{Field: "preserve", Message: "the image's metadata is over imgflow's bounds"}}}
}
