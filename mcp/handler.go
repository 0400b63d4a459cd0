package mcp

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/internal/version"
)

// Options configure New.
type Options struct {
	// Backend runs the tools' REST operations. Required.
	Backend Backend
	// Catalog is rendered as the tools. Default catalog.Default().
	Catalog *catalog.Catalog
	// Uploads serves prepare_upload and the upload URLs; nil leaves them out.
	Uploads *Uploads
	// Version is the server version MCP clients are told.
	Version string
	Logger  *slog.Logger
}

// Path is where the MCP endpoint is mounted.
const Path = "/mcp"

// Handler is the MCP server: POST /mcp (Streamable HTTP, stateless) and,
// with Uploads, PUT /mcp/uploads/{slot}. The caller has checked the key
// before the body is read (server.Config.MCP).
type Handler struct {
	streamable http.Handler
	uploads    *Uploads
}

// New builds the MCP server from the catalog.
func New(o Options) *Handler {
	if o.Catalog == nil {
		o.Catalog = catalog.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = version.String()
	}
	if o.Uploads != nil {
		o.Uploads.defaults()
	}
	tools := newToolSet(o.Catalog, o.Backend, o.Uploads)
	srv := sdk.NewServer(&sdk.Implementation{Name: "imgflow", Title: "imgflow image compression", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: quiet(o.Logger)})
	for _, t := range tools.tools {
		run := tools.byName[t.Name]
		srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			args, err := parseArguments(req.Params.Arguments)
			if err != nil {
				return errorResult(err), nil
			}
			var header http.Header
			if req.Extra != nil {
				header = req.Extra.Header
			}
			return run(ctx, keyOf(header), args), nil
		})
	}
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		// Nothing per session: every POST is answered on its own, by
		// any replica.
		Stateless: true,
		// One JSON answer per POST: no tool streams, and no SSE framing
		// to pay for.
		JSONResponse: true,
		// Every request carries the API key, checked before this handler
		// runs, and serve is often behind a proxy on loopback with the
		// public Host: the SDK's loopback Host check would refuse it.
		DisableLocalhostProtection: true,
		Logger:                     quiet(o.Logger),
	})
	return &Handler{streamable: streamable, uploads: o.Uploads}
}

// instructions tell the agent how the tools fit together.
const instructions = "imgflow compresses PNG, JPEG, WebP and AVIF images. Give compress_image an image_url when the image has one; " +
	"otherwise call prepare_upload, PUT the bytes to its URL and pass the handle as upload (base64 only for tiny images). " +
	"Results link the compressed file by a signed URL. A job still running after 25 s is followed with get_job. " +
	"Pass an idempotency_key when you may retry: the same key never charges twice. check_image tells the cost first, check_account the credits left."

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.uploads != nil && strings.HasPrefix(r.URL.Path, UploadPath) {
		h.uploads.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		body := bufio.NewReader(r.Body)
		if isBatch(body) {
			refuseBatch(w)
			return
		}
		r.Body = readCloser{Reader: body, Closer: r.Body}
	}
	rw := &rpcErrors{ResponseWriter: w}
	h.streamable.ServeHTTP(rw, r)
	rw.finish()
}

// keyOf is the API key of the MCP request, as the REST API reads it.
func keyOf(h http.Header) string {
	if k := strings.TrimSpace(h.Get("X-API-Key")); k != "" {
		return k
	}
	if scheme, token, ok := strings.Cut(h.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}

// quiet passes on the SDK's warnings and errors only: it logs every
// stateless request's session at info, which the request log already
// says.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: l.Handler(), min: slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

// JSON-RPC batches are refused, whatever protocol version the client
// names: the current protocol has none, and a batch would run its calls at
// once (thirty previews in one POST). One request per POST keeps a call's
// cost what its arguments say.

// isBatch reports whether the body's JSON starts with '[' (a batch).
func isBatch(body *bufio.Reader) bool {
	for i := 1; i <= 512; i++ {
		head, err := body.Peek(i)
		if len(head) < i {
			return false
		}
		switch c := head[i-1]; c {
		case ' ', '\t', '\r', '\n':
			if err != nil {
				return false
			}
			continue
		default:
			return c == '['
		}
	}
	return false
}

// refuseBatch answers a batch with a JSON-RPC error.
func refuseBatch(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not accepted: send one request per POST"}}`+"\n")
}

type readCloser struct {
	io.Reader
	io.Closer
}
