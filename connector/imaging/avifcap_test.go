package imaging

import (
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// An AVIF result over AV1's largest single picture is refused naming
// convert; the same size in another type, and an AVIF at the cap, are not.
// Two of the largest AVIFs or WebPs never share the transform budget; two
// of the largest PNGs do.
func TestAVIFResultsAreCappedAtAV1sLargestPicture(t *testing.T) {
	big := Info{Type: "image/avif", Width: 7000, Height: 7000}
	err := CheckOutput(big)
	if connector.ErrorCodeOf(err) != connector.EINVALID || connector.AsError(err).Details[0].Field != "convert" {
		t.Fatalf("a 49 MP AVIF: expected invalid_input naming convert, got %v", err)
	}
	for _, ok := range []Info{{Type: "image/png", Width: 7000, Height: 7000}, {Type: "image/avif", Width: 5968, Height: 5973}} {
		if err := CheckOutput(ok); err != nil {
			t.Errorf("%v: expected allowed, got %v", ok, err)
		}
	}
	in := Info{Width: 5968, Height: 5973}
	avif := transformCost(in, Info{Type: "image/avif", Width: 5968, Height: 5973})
	if avif > TransformBudget || 2*avif <= TransformBudget {
		t.Errorf("the largest AVIF costs %d of %d: expected one alone to fit and two not to", avif, TransformBudget)
	}
	big.Type = "image/webp"
	if webp := transformCost(big, big); webp > TransformBudget || 2*webp <= TransformBudget {
		t.Errorf("a 49 MP WebP costs %d of %d: expected one alone to fit and two not to", webp, TransformBudget)
	}
	big.Type = "image/png"
	if png := transformCost(big, big); 2*png > TransformBudget {
		t.Errorf("two 49 MP PNGs cost %d of %d: expected them to share it", 2*png, TransformBudget)
	}
}
