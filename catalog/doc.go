// Package catalog is the single source of every platform's actions and
// triggers: for each, what the user fills in (Field), what comes out
// (OutputField, a dotted path in the API's answer), how a platform runs it
// (OperationKind) and a realistic sample. Default is imgflow's catalog.
//
// Everything that describes the API to a platform is rendered from it, so
// nothing drifts from the server: definitions/ for Zapier, n8n, Make, Power
// Automate and OpenAPI (GET /openapi.json too), and mcp/ for the MCP tools.
// Their JSON Schemas share one core, FieldType.Schema and OutputsSchema
// (schema.go), which state a type as precisely as each reader takes it.
//
// It describes the API and runs none of it. Domain values (statuses,
// events, limits, the answer types its samples are) come from connector,
// which never imports this package.
//
// Tests: go test ./catalog/ checks the catalog itself (every field labelled
// and explained, every output in a sample); the renderers' tests, and
// regenerating the definitions, check what each platform makes of it.
package catalog
