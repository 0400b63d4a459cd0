package definitions

// addConnectedAppsToOpenAPI documents the key's connected apps
// (server/connectedapps.go): the OAuth clients that act as the key
// through MCP, listed and revoked by the console.
func addConnectedAppsToOpenAPI(doc obj) {
	paths, schemas := doc["paths"].(obj), doc["components"].(obj)["schemas"].(obj)
	doc["tags"] = append(doc["tags"].([]any), obj{"name": "connected-apps",
		"description": "OAuth clients (MCP apps such as Claude or ChatGPT) that act as the key; see docs/mcp-oauth.md."})
	op := func(id, summary, desc string, extra obj) obj {
		o := obj{"operationId": id, "tags": []string{"connected-apps"}, "summary": summary, "description": desc}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	paths["/v1/connected-apps"] = obj{"get": op("listConnectedApps", "List the key's connected apps",
		"The OAuth clients that hold a grant for this key, newest first.", obj{
			"responses": oasErrors(obj{"200": oasResponse("The key's connected apps.", "ConnectedAppList")}, "401", "503"),
		})}
	paths["/v1/connected-apps/{id}"] = obj{"delete": op("revokeConnectedApp", "Revoke a connected app",
		"Its access and refresh tokens stop working on every replica at their next request.", obj{
			"parameters": []any{oasParam("id", "path", "The connected app's id (its grant).", true, obj{"type": "string"})},
			"responses":  oasErrors(obj{"204": obj{"description": "Revoked."}}, "401", "404", "503"),
		})}
	dateTime := obj{"type": "string", "format": "date-time"}
	schemas["ConnectedApp"] = obj{"type": "object", "required": []string{"id", "client_id", "client_name", "created_at", "refreshed_at"},
		"properties": obj{
			"id":           obj{"type": "string", "description": "The grant's id: what DELETE takes."},
			"client_id":    obj{"type": "string", "description": "The OAuth client: ifc_… when registered, or its metadata document's https URL."},
			"client_name":  obj{"type": "string"},
			"created_at":   dateTime,
			"refreshed_at": obj{"type": "string", "format": "date-time", "description": "When the app last renewed its tokens."},
		}}
	schemas["ConnectedAppList"] = obj{"type": "object", "required": []string{"apps"},
		"properties": obj{"apps": obj{"type": "array", "items": obj{"$ref": oasRef + "ConnectedApp"}}}}
}
