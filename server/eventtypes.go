package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// eventTypeList is the JSON of GET /v1/event-types.
type eventTypeList struct {
	EventTypes []eventType `json:"event_types"`
}

type eventType struct {
	Type        string         `json:"type"`
	Description string         `json:"description"`
	Schema      map[string]any `json:"schema"`
}

// listEventTypes is GET /v1/event-types: every event a callback or hook
// receives, with the JSON schema of its body, read from the OpenAPI
// document (x-imgflow-event-types) with its references filled in, so that
// each schema stands alone and both documents say the same.
func (s *Server) listEventTypes(c echo.Context) error {
	_, doc, err := s.definitions()
	if err != nil {
		return err
	}
	var d struct {
		Types      []eventType `json:"x-imgflow-event-types"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	for i := range d.Types {
		d.Types[i].Schema, _ = inlineRefs(d.Types[i].Schema, d.Components.Schemas, 0).(map[string]any)
	}
	return c.JSON(http.StatusOK, eventTypeList{EventTypes: d.Types})
}

// inlineRefs replaces each {"$ref": "#/components/schemas/X"} in v with
// schema X, to a depth that no schema of this API reaches.
func inlineRefs(v any, schemas map[string]any, depth int) any {
	if depth > 16 {
		return map[string]any{}
	}
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			return inlineRefs(schemas[strings.TrimPrefix(ref, "#/components/schemas/")], schemas, depth+1)
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			if k != "example" {
				out[k] = inlineRefs(e, schemas, depth+1)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = inlineRefs(e, schemas, depth+1)
		}
		return out
	}
	return v
}
