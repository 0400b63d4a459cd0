package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// compressVariantsRunner is the compress_variants tool: one image, up to
// ten sizes, answered with a resource link per completed variant, the
// set's ZIP, and its srcset.
var compressVariantsRunner = runner{
	extra: []catalog.Field{uploadField, idempotencyField, waitField(maxWaitSeconds)},
	description: "Makes 1 to 10 sizes of one image (one fetch, one decode), each compressed: a link per size, a srcset and a <picture> snippet. " +
		"Costs one credit per size, none for a size made before",
	output: func(op *catalog.Operation) obj { return outputSchema(briefOutputs(op.Outputs, setOutputKeys)) },
	run: func(t *toolSet, ctx context.Context, key string, op *catalog.Operation, a *arguments) *sdk.CallToolResult {
		req, _, err := t.jobRequest(ctx, key, op, a, maxWaitSeconds)
		if err != nil {
			return errorResult(err)
		}
		defer closeUpload(req.Upload)
		set, err := t.backend.CompressVariants(ctx, key, req)
		if err != nil {
			return errorResult(err)
		}
		return variantSetResult(set)
	},
}

// variantSetResult answers a set: a line, a link per completed variant,
// the ZIP once it is finished.
func variantSetResult(s *connector.VariantSetAnswer) *sdk.CallToolResult {
	c := s.Counts
	line := fmt.Sprintf("Set %s is %s: %d of %d sizes made, %d failed.", s.ID, s.Status, c.Completed, c.Total, c.Failed) + stillRunning(c)
	if s.Srcset != "" {
		line += " srcset: " + s.Srcset
	}
	content := append([]sdk.Content{&sdk.TextContent{Text: line}},
		itemLinks(s.Batch, s.Jobs, "set-"+s.ID+".zip", "Every size (ZIP)")...)
	return &sdk.CallToolResult{StructuredContent: structured(s), Content: content}
}

// setOutputKeys are the outputs of a set a model reads (the structured
// answer carries them all): tools/list is in every conversation.
var setOutputKeys = map[string]bool{"id": true, "status": true, "counts.completed": true, "counts.failed": true,
	"srcset": true, "picture": true, "links.archive": true, "jobs": true,
	"variant": true, "result.file_url": true, "result.width": true, "result.height": true, "result.mime_type": true, "error.code": true}

// briefOutputs keeps the outputs (and list fields) named in keys.
func briefOutputs(outs []catalog.OutputField, keys map[string]bool) []catalog.OutputField {
	var kept []catalog.OutputField
	for _, o := range outs {
		if !keys[o.Key] {
			continue
		}
		if len(o.Fields) > 0 {
			o.Fields = briefOutputs(o.Fields, keys)
		}
		kept = append(kept, o)
	}
	return kept
}
