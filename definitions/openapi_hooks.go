package definitions

import (
	"strings"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// addHookTriggersToOpenAPI documents the catalog's hook triggers on
// POST /v1/hooks: which catalog keys subscribe there, the body each sends,
// and one callback per trigger with the schema of what its deliveries
// carry (beside the generic "delivery" callback of every event).
func addHookTriggersToOpenAPI(c *catalog.Catalog, doc obj) {
	post := doc["paths"].(obj)["/v1/hooks"].(obj)["post"].(obj)
	schemas := doc["components"].(obj)["schemas"].(obj)
	callbacks := post["callbacks"].(obj)
	var keys, lines []string
	var triggers []any
	for _, op := range c.HookTriggers() {
		op := op
		keys = append(keys, op.Key)
		lines = append(lines, "- "+op.Label+" ("+strings.Join(op.HookEvents, ", ")+"): "+op.Description)
		example := hookSubscribeBody(&op, "https://hooks.example.com/imgflow", func(f catalog.Field) any {
			if d := typedDefault(f); d != nil {
				return d
			}
			return f.Example
		})
		if ev := op.FixedHookEvent(); ev == "" {
			example[catalog.HookEventInput] = op.HookEvents[0]
		}
		triggers = append(triggers, obj{"key": op.Key, "label": op.Label, "events": op.HookEvents, "example": example})

		schema := "Delivery"
		if _, isJob := op.Sample.(*connector.Job); !isJob {
			schema = upperFirst(camel(op.Key)) + "Event"
			schemas[schema] = obj{"type": "object", "required": []string{"type", "timestamp", "data"}, "properties": obj{
				"type":      obj{"type": "string", "enum": op.HookEvents},
				"timestamp": obj{"type": "string", "format": "date-time"},
				"data":      outputsSchema(op.Outputs, op.Sample),
			}}
		}
		callbacks[camel(op.Key)] = obj{"{$request.body#/target_url}": obj{"post": obj{
			"summary":     op.Label + ": " + strings.Join(op.HookEvents, " or "),
			"description": op.Description + " " + op.Help,
			"requestBody": obj{"required": true, "content": jsonContent(schema)},
			"responses":   obj{"200": obj{"description": "Received; 410 unsubscribes."}},
		}}}
	}
	post["summary"] = "Subscribe a URL to an event (the platforms' hook triggers)"
	post["description"] = "Every hook trigger of the platforms subscribes here, each with its event:\n" + strings.Join(lines, "\n")
	post["x-imgflow-catalog-keys"] = keys
	post["x-imgflow-hook-triggers"] = triggers
}
