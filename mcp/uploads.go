package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/keyring"
)

// Uploads lets an agent hand over an image without putting its bytes in a
// tool call (where they would pass through the model's output): the
// prepare_upload tool answers a short-lived signed URL to PUT the bytes to
// (no key in it) and a handle that compress_image, compress_many and
// check_image take as "upload". The shapes follow the draft SEP-2631 (File
// Objects and Transfer): files/prepareUpload's {file, transfer} answer and
// an mcp-file:// URI as the file input, so the tool can become that method
// when the spec lands.
//
// Nothing is kept per session: the handle is a random id, the bytes are a
// blob under a name derived from the key's hash and the id (so another key
// holding the handle finds nothing), and the URL's token is signed with the
// server secret. Any serve replica takes the PUT and resolves the handle.
type Uploads struct {
	Blobs connector.BlobStore
	Keys  *keyring.Keyring
	// PublicURL is the server's public base, without a trailing slash.
	PublicURL string
	// URLTTL is how long an upload URL takes a PUT. Default 15 min.
	URLTTL time.Duration
	// TTL is how long the uploaded bytes are kept for compress calls,
	// retries included. Default 1 h.
	TTL time.Duration
	Now func() time.Time
	// Claims makes an upload URL single-use across every serve replica:
	// its one PUT claims it (redisstore.Blobs). Without it (tests), a
	// claim holds in this process only.
	Claims Claims

	putting sync.Map // slots claimed in this process, when Claims is nil
}

// Claims are names taken once, whoever asks (redisstore.Blobs fits).
type Claims interface {
	// ClaimOnce takes name for ttl: false when it is taken already.
	ClaimOnce(ctx context.Context, name string, ttl time.Duration) (bool, error)
	// GiveBack releases name for another caller.
	GiveBack(ctx context.Context, name string) error
}

// claim takes slot's one PUT, on every replica when Claims is set, for as
// long as the URL and its bytes live; done ends the PUT, giving the claim
// back when it stored nothing (the URL stays usable). Without Claims the
// claim lasts the PUT, and stored bytes refuse the next one.
func (u *Uploads) claim(ctx context.Context, slot string) (ok bool, done func(stored bool), err error) {
	if u.Claims == nil {
		if _, busy := u.putting.LoadOrStore(slot, struct{}{}); busy {
			return false, nil, nil
		}
		return true, func(bool) { u.putting.Delete(slot) }, nil
	}
	name := "mcp-upload:" + slot
	ok, err = u.Claims.ClaimOnce(ctx, name, u.URLTTL+u.TTL)
	if err != nil || !ok {
		return false, nil, err
	}
	return true, func(stored bool) {
		if !stored {
			u.Claims.GiveBack(context.WithoutCancel(ctx), name)
		}
	}, nil
}

// codeUploadUsed refuses a second PUT to an upload URL (409): the bytes
// behind a handle never change once uploaded.
const codeUploadUsed connector.ErrorCode = "upload_already_used"

const (
	prepareUploadName = "prepare_upload"
	handlePrefix      = "mcp-file://imgflow/uploads/"
	// UploadPath is where upload URLs point: PUT {UploadPath}{slot}?token=.
	UploadPath = "/mcp/uploads/"
	// fileInputsMeta is the draft's interim _meta key declaring a tool's
	// file-valued arguments.
	fileInputsMeta = "modelcontextprotocol.io/fileInputs"
)

func (u *Uploads) defaults() {
	if u.URLTTL <= 0 {
		u.URLTTL = 15 * time.Minute
	}
	if u.TTL <= 0 {
		u.TTL = time.Hour
	}
	if u.Now == nil {
		u.Now = time.Now
	}
}

// fileInput declares the upload argument as a file input (accepted types,
// size cap), as the draft's sidecar map does.
func fileInput() obj {
	return obj{"accept": []string{"image/png", "image/jpeg", "image/webp", "image/avif"}, "maxFileSize": connector.MaxImageSize,
		"purpose": "The image to compress, uploaded with prepare_upload."}
}

func (u *Uploads) tool() *sdk.Tool {
	str := obj{"type": "string"}
	no := false
	return &sdk.Tool{
		Name:  prepareUploadName,
		Title: "Prepare Image Upload",
		Description: "Answers a short-lived URL to upload an image to, and a handle for it. PUT the image's bytes to transfer.url (with transfer.headers; no API key needed, " +
			"up to 10 MiB, within 15 minutes), then pass file.uri as the upload argument of compress_image, compress_many or check_image. " +
			"Use it for images that have no URL, instead of sending base64. The upload is kept for an hour and costs nothing.",
		InputSchema: obj{"type": "object", "additionalProperties": false, "properties": obj{
			"name":     obj{"type": "string", "title": "File Name", "description": "The image's file name, such as photo.png; it becomes the compressed file's name."},
			"mimeType": obj{"type": "string", "title": "MIME Type", "description": "The image's type, such as image/png."},
			"size":     obj{"type": "integer", "title": "Size (bytes)", "description": "The image's size in bytes, if known: over 10 MiB is refused at once."},
		}},
		OutputSchema: obj{"type": "object", "properties": obj{
			"file": obj{"type": "object", "description": "The file handle (SEP-2631 FileValue).", "properties": obj{
				"uri": obj{"type": "string", "description": "The handle: pass it as upload."}, "name": str, "mimeType": str, "size": obj{"type": "integer"}}},
			"transfer": obj{"type": "object", "description": "How to send the bytes (SEP-2631 transfer descriptor).", "properties": obj{
				"transport": str, "method": str, "url": str, "expiresAt": str,
				"headers": obj{"type": "object", "additionalProperties": str}}},
			"error": errorOutput(),
		}},
		Annotations: &sdk.ToolAnnotations{Title: "Prepare Image Upload", ReadOnlyHint: false, IdempotentHint: false,
			DestructiveHint: &no, OpenWorldHint: &no},
	}
}

// uploadTicket is prepare_upload's answer.
type uploadTicket struct {
	File     fileValue `json:"file"`
	Transfer transfer  `json:"transfer"`
}

type fileValue struct {
	URI      string `json:"uri"`
	Name     string `json:"name,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

type transfer struct {
	Transport string            `json:"transport"`
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers,omitempty"`
	ExpiresAt time.Time         `json:"expiresAt"`
}

// prepare is the prepare_upload tool.
func (u *Uploads) prepare(ctx context.Context, key string, a *arguments) *sdk.CallToolResult {
	err := a.check(map[string]catalog.Field{"name": {}, "mimeType": {}, "size": {}})
	name, nerr := a.string("name")
	mimeType, merr := a.string("mimeType")
	size, serr := a.int("size", 0, 1<<62, 0)
	if err = errors.Join(err, nerr, merr, serr); err != nil {
		return errorResult(firstError(err))
	}
	if size > connector.MaxImageSize {
		return errorResult(&connector.Error{Code: connector.ETOOLARGE, Message: "the image is over 10 MiB, the most imgflow compresses"})
	}
	name = cleanName(name)
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return errorResult(err)
	}
	id := hex.EncodeToString(raw[:])
	slot := u.slot(key, id)
	exp := u.Now().Add(u.URLTTL).Truncate(time.Second)
	handle := handlePrefix + id
	if name != "" {
		handle += "/" + url.PathEscape(name)
	}
	t := uploadTicket{
		File: fileValue{URI: handle, Name: name, MIMEType: mimeType, Size: int64(size)},
		Transfer: transfer{Transport: "https", Method: http.MethodPut, ExpiresAt: exp.UTC(),
			URL: u.PublicURL + UploadPath + slot + "?token=" + u.Keys.FileToken(uploadScope(slot), exp)},
	}
	if mimeType != "" {
		t.Transfer.Headers = map[string]string{"Content-Type": mimeType}
	}
	text := "PUT the image's bytes to " + t.Transfer.URL + " before " + exp.UTC().Format(time.RFC3339) + ", then call compress_image with upload " + strconv.Quote(handle) + "."
	return &sdk.CallToolResult{StructuredContent: structured(t), Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// slot is where a key's upload id is stored: a name no other key reaches.
func (u *Uploads) slot(key, id string) string {
	sum := sha256.Sum256([]byte(u.Keys.KeyHash(key) + "\x00" + id))
	return hex.EncodeToString(sum[:16])
}

func uploadScope(slot string) string   { return "mcp-upload/" + slot }
func uploadBlobKey(slot string) string { return "mcp-upload:" + slot }

// open opens the upload a key made under handle, with the file name the
// handle carries: its size is known at once, its bytes are read by the
// job that takes them. The caller closes it.
func (u *Uploads) open(ctx context.Context, key, handle, field string) (*Upload, error) {
	id, escapedName, err := parseHandle(handle, field)
	if err != nil {
		return nil, err
	}
	name, _ := url.PathUnescape(escapedName)
	blob, err := u.Blobs.Open(ctx, uploadBlobKey(u.slot(key, id)))
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil, &connector.Error{Code: connector.ENOTFOUND, Message: "nothing was uploaded for this handle (not yet PUT, expired after an hour, or made with another key)",
			Details: []connector.FieldError{{Field: field, Message: "no upload"}}}
	}
	if err != nil {
		return nil, err
	}
	if blob.Size > connector.MaxImageSize {
		blob.Close()
		return nil, &connector.Error{Code: connector.ETOOLARGE, Message: "the upload is over 10 MiB, the most imgflow compresses",
			Details: []connector.FieldError{{Field: field, Message: "over 10 MiB"}}}
	}
	return &Upload{Reader: blob, Size: blob.Size, Name: cleanName(name)}, nil
}

// parseHandle splits a handle into its upload id and escaped file name.
func parseHandle(handle, field string) (id, escapedName string, err error) {
	rest, ok := strings.CutPrefix(handle, handlePrefix)
	id, escapedName, _ = strings.Cut(rest, "/")
	if !ok || len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", "", fieldError(field, "must be a handle from prepare_upload ("+handlePrefix+"...)")
	}
	return id, escapedName, nil
}

// uploadID is a handle's upload id ("" for no handle): two handles of one
// upload differ only in the name they carry.
func uploadID(handle string) string {
	id, _, _ := parseHandle(handle, "")
	return id
}

// ServeHTTP takes the PUT of an upload URL: the token, then at most 10 MiB
// of bytes, kept for TTL.
func (u *Uploads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	slot := strings.TrimPrefix(r.URL.Path, UploadPath)
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "PUT the image's bytes to this URL")
		return
	}
	if len(slot) != 32 || !u.Keys.VerifyFileToken(uploadScope(slot), r.URL.Query().Get("token"), u.Now()) {
		writeError(w, http.StatusNotFound, connector.ENOTFOUND, "this upload link is invalid or has expired: call prepare_upload again")
		return
	}
	// Single use: the first PUT claims the URL on every replica (a compare
	// and set in Redis), for as long as the URL and its bytes live; a PUT
	// that stored nothing (failed or empty) gives the claim back and leaves
	// the URL usable.
	claimed, done, err := u.claim(r.Context(), slot)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, connector.EUNAVAILABLE, "the upload could not be claimed; retry")
		return
	}
	if !claimed {
		writeError(w, http.StatusConflict, codeUploadUsed, "this upload link was already used: each link takes one upload; call prepare_upload for another")
		return
	}
	stored := false
	defer func() { done(stored) }()
	if b, err := u.Blobs.Open(r.Context(), uploadBlobKey(slot)); err == nil {
		b.Close()
		stored = true // bytes stored before a claim was kept: they stay
		writeError(w, http.StatusConflict, codeUploadUsed, "this upload link was already used: each link takes one upload; call prepare_upload for another")
		return
	}
	if r.ContentLength > connector.MaxImageSize {
		writeError(w, http.StatusRequestEntityTooLarge, connector.ETOOLARGE, "the image is over 10 MiB, the most imgflow compresses")
		return
	}
	body := &capped{r: r.Body, left: connector.MaxImageSize}
	err = u.Blobs.Put(r.Context(), uploadBlobKey(slot), body, r.ContentLength, u.TTL)
	switch {
	case body.over:
		writeError(w, http.StatusRequestEntityTooLarge, connector.ETOOLARGE, "the image is over 10 MiB, the most imgflow compresses")
	case err != nil && connector.ErrorCodeOf(err) == connector.EUNAVAILABLE:
		writeError(w, http.StatusServiceUnavailable, connector.EUNAVAILABLE, "the upload could not be stored; retry")
	case err != nil:
		writeError(w, http.StatusBadRequest, connector.EINVALID, "the upload could not be read: "+err.Error())
	case body.n == 0:
		u.Blobs.Delete(r.Context(), uploadBlobKey(slot))
		writeError(w, http.StatusBadRequest, connector.EINVALID, "the request body is empty: PUT the image's bytes")
	default:
		stored = true
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"size": body.n, "expires_at": u.Now().Add(u.TTL).UTC()})
	}
}

// capped reads at most left bytes, and notes a body that had more.
type capped struct {
	r    io.Reader
	left int64
	n    int64
	over bool
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		c.over = true
		return 0, errors.New("upload over the size limit")
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return n, errors.New("upload over the size limit")
	}
	return n, err
}

func writeError(w http.ResponseWriter, status int, code connector.ErrorCode, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": string(code)})
}

// cleanName keeps a file name's last path element, trimmed.
func cleanName(name string) string {
	name = strings.TrimSpace(name)
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if len(name) > 255 {
		name = name[:255]
	}
	return name
}
