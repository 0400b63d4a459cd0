// Package upstream is the client of the compression API (the upstream):
// POST /compress, POST /validate and GET /health under a base URL ending in
// /api. It implements connector.Compressor, streams each image into the
// multipart request without copying it, and turns every answer the contract
// and its older listings allow into a *connector.Error with a code.
package upstream
