package mcp_test

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/internal/systemtest"
)

func TestCompressVariantsAnswersALinkPerSizeAndTheZIP(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	var set struct {
		Status string
		Srcset string
		Jobs   []struct {
			Variant string
			Result  struct{ Width int }
		}
	}
	res := systemtest.CallTool(t, s.mcp(), "compress_variants", map[string]any{
		"image_url": s.Samples + "/photo.jpg",
		"variants":  []any{map[string]any{"id": "sm", "resize": "64x", "convert": "webp"}, map[string]any{"id": "md", "resize": "128x"}},
	}, &set)
	if res.IsError || set.Status != "finished" || len(set.Jobs) != 2 || set.Jobs[0].Variant != "sm" || set.Jobs[1].Result.Width != 128 {
		t.Fatalf("compress_variants: %s %+v", systemtest.ToolText(res), set)
	}
	var links []string
	for _, c := range res.Content {
		if l, ok := c.(*sdk.ResourceLink); ok {
			links = append(links, l.Name+" "+l.MIMEType)
		}
	}
	if len(links) != 3 || !strings.Contains(strings.Join(links, ","), "application/zip") || !strings.Contains(systemtest.ToolText(res), "128w") {
		t.Errorf("links %v, text %q; want one per size, the ZIP, and the srcset", links, systemtest.ToolText(res))
	}
}
