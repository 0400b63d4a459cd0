// Package definitions renders imgflow's action catalog (catalog.Catalog)
// as connector definitions for the automation platforms: a Zapier app, n8n
// workflows, Make custom-app IML files, a Power Automate custom connector and
// an OpenAPI 3 document. Rendering is deterministic (sorted keys, two-space
// indent, trailing newline), so the files committed under the platform
// folders beside this file equal a fresh Render byte for byte, and the
// server serves the same bytes for its own public URL.
package definitions
