package definitions

import (
	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// Power Automate's side of responsive sets: Make Image Sizes is an action
// of its own at POST /v1/jobs/variants (swagger keys operations by method
// and path, and POST /v1/jobs is Compress Image). The sizes are a list to
// add items to (or an array from an earlier action); the set comes back
// with each size's job in the order given (jobs, for an Apply to each),
// the srcset and the <picture> snippet, after the same 202 + Location
// polling as Compress Image.

// paVariantSetOp is Make Image Sizes as a swagger operation.
func paVariantSetOp(op *catalog.Operation, params func(*catalog.Operation) []any,
	paOp func(*catalog.Operation, string) obj, withErrs func(obj) obj) obj {
	ps := params(op)
	for _, p := range ps {
		if p := p.(obj); p["in"] == "body" {
			if sizes := schemaProperty(p["schema"].(obj), "variants"); sizes != nil {
				sizes["maxItems"] = connector.MaxVariants
			}
		}
	}
	o := paOp(op, "MakeImageSizes")
	o["parameters"] = append(ps, paFixedQuery(op)...)
	o["responses"] = withErrs(obj{
		"200": obj{"description": "The finished set: each size's job in the order given (completed with result.file_url, or failed with its error), the srcset and a <picture> snippet.",
			"schema": obj{"$ref": swaggerRef + "VariantSet"}},
		"202": obj{"description": "Still running after the wait: Power Automate polls Location, waiting Retry-After seconds between polls, until it answers 200 with the finished set and its jobs.",
			"headers": obj{"Location": obj{"type": "string", "description": "URL of the set (?poll=1&include=jobs): 202 until every size is finished."},
				"Retry-After": obj{"type": "integer", "description": "Seconds between polls."}}},
	})
	return o
}

// paVariantSetSchema is the set as Power Automate shows it: the jobs an
// array an Apply to each goes through, the srcset and picture up front.
func paVariantSetSchema(op *catalog.Operation) obj {
	s := paBatchSchema(op)
	for _, key := range []string{"srcset", "picture"} {
		if p := schemaProperty(s, key); p != nil {
			p["x-ms-visibility"] = "important"
		}
	}
	return s
}
