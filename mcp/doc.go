// Package mcp is imgflow's MCP server: the Model Context Protocol over
// Streamable HTTP at /mcp, stateless (every request stands alone, so any
// serve replica answers any request), for AI agents as one more automation
// platform.
//
// Its tools are rendered from catalog.Catalog like every platform's
// definitions (tools.go): compress_image, compress_many, get_job,
// list_jobs, check_image and check_account, plus prepare_upload
// (uploads.go), which hands out a short-lived signed URL to PUT an image to
// and a handle compress_image takes, so images never travel through the
// model's output. Each tool calls a Backend, a narrow typed interface of the
// API's operations; server.Operations implements it on the creation
// service, the store's wait and the API's rendering (the REST binding,
// error codes, idempotency and per-key limits, with no HTTP in between).
// Calls are bounded before anything is read: compress_many's count, its
// uploads each used once and their total size; no JSON-RPC batches;
// previews shrunk on load.
//
// serve and dev mount it (server.Config.MCP); the key is checked by the
// server before the body is read. Tests: go test ./mcp, the unit tests and
// the system tests (mcp_system_test.go, go test -run TestMCP ./mcp); the official
// TypeScript SDK's client runs against imgflow dev in .ci/mcp.sh.
package mcp
