package mcp

import (
	"encoding/json"
	"net/http"
	"strings"
)

// The SDK's stateless handler refuses a body it cannot parse, or a method
// it does not know, with a plain-text HTTP error before any session exists.
// Clients expect JSON-RPC errors: rpcErrors rewrites those answers into
// one (same HTTP status), leaving every other answer untouched.

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
)

type rpcErrors struct {
	http.ResponseWriter
	status  int
	text    strings.Builder
	rewrite bool
}

func (w *rpcErrors) WriteHeader(status int) {
	ct := w.Header().Get("Content-Type")
	if status >= 400 && (ct == "" || strings.HasPrefix(ct, "text/plain")) {
		w.status, w.rewrite = status, true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcErrors) Write(p []byte) (int, error) {
	if w.rewrite {
		return w.text.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *rpcErrors) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.rewrite {
		f.Flush()
	}
}

// finish writes the JSON-RPC error of a rewritten answer.
func (w *rpcErrors) finish() {
	if !w.rewrite {
		return
	}
	msg := strings.TrimSpace(w.text.String())
	code := rpcInvalidRequest
	switch {
	case strings.Contains(msg, "malformed payload") || strings.Contains(msg, "unmarshal"):
		code = rpcParseError
	case strings.Contains(msg, "not handled") || strings.Contains(msg, "unsupported"):
		code = rpcMethodNotFound
	}
	h := w.Header()
	h.Del("X-Content-Type-Options")
	h.Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(w.status)
	json.NewEncoder(w.ResponseWriter).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg}})
}
