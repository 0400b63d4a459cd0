package definitions

import (
	"net/url"

	"github.com/imgflow/imgflow/catalog"
)

// The Copilot Studio variant of the Power Automate connector: a custom
// connector whose one operation is the MCP endpoint, marked
// x-ms-agentic-protocol: mcp-streamable-1.0, so that an agent in Copilot
// Studio lists and calls imgflow's MCP tools (mcp/) itself. Imported like
// the flow connector (paconn, or Power Apps' "Import an OpenAPI file"),
// with the same API key connection.

const (
	mcpDefinitionFile = "mcp.apiDefinition.swagger.json"
	mcpPropertiesFile = "mcp.apiProperties.json"
	// mcpPath is where serve mounts the MCP server (mcp.Path).
	mcpPath = "/mcp"
)

// paMCPConnector is the Copilot Studio MCP connector's two files.
func paMCPConnector(c *catalog.Catalog, u *url.URL, basePath string) (def, props obj) {
	def = obj{
		"swagger": "2.0",
		"info": obj{"title": c.Name + " (MCP)", "version": zapierAppVersion,
			"description": c.Description + " As an MCP server for Copilot Studio agents: compress images by URL or upload, follow jobs, check images and credits.",
			"contact":     obj{"name": c.Name, "url": u.Scheme + "://" + u.Host}},
		"host":                u.Host,
		"basePath":            basePath,
		"schemes":             []string{u.Scheme},
		"consumes":            []string{"application/json"},
		"produces":            []string{"application/json"},
		"securityDefinitions": obj{"api_key": obj{"type": "apiKey", "in": "header", "name": c.Auth.Header}},
		"security":            []any{obj{"api_key": []any{}}},
		"paths": obj{mcpPath: obj{"post": obj{
			"operationId":           "InvokeMCP",
			"summary":               c.Name + " MCP server",
			"description":           "The Model Context Protocol endpoint (Streamable HTTP, stateless): the agent lists imgflow's tools and calls them.",
			"x-ms-agentic-protocol": "mcp-streamable-1.0",
			"responses":             obj{"200": obj{"description": "Success"}},
		}}},
		"x-ms-connector-metadata": []any{
			obj{"propertyName": "Website", "propertyValue": u.Scheme + "://" + u.Host},
			obj{"propertyName": "Categories", "propertyValue": "AI;Content and Files"},
		},
	}
	return def, paProperties(c)
}
