package catalog

import (
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// FieldType is the kind of value an input or output field holds, in terms
// every platform can map: string, text (multi-line), integer, number,
// boolean, datetime, file (a URL a platform hands over for a file),
// object (free key/value data) and list (records, each described by the
// field's own Fields: Zapier line items, Make's array, an array in Swagger,
// n8n's input items).
type FieldType string

const (
	FieldString   FieldType = "string"
	FieldText     FieldType = "text"
	FieldInteger  FieldType = "integer"
	FieldNumber   FieldType = "number"
	FieldBoolean  FieldType = "boolean"
	FieldDateTime FieldType = "datetime"
	FieldFile     FieldType = "file"
	FieldObject   FieldType = "object"
	FieldList     FieldType = "list"
)

// Field is one input a user fills in for an action, a trigger or the
// connection. Key is the name the API takes (a JSON body field, a query
// parameter or a path parameter, as In says).
type Field struct {
	Key      string
	Label    string
	Help     string
	Type     FieldType
	Required bool
	// In says where the value goes: "body" (the default), "query" or "path".
	In string
	// Choices restricts the value to a list; Default is preselected.
	Choices []string
	Default string
	// Example is a realistic value, shown as a placeholder.
	Example string
	// Fields describe each record of a FieldList field; their In is unused.
	Fields []Field
}

// Where a field's value goes in the request.
const (
	InBody  = "body"
	InQuery = "query"
	InPath  = "path"
)

// OutputField is one value an operation returns. Key is its path in the
// answer, dotted for nested values ("result.compressed_size").
type OutputField struct {
	Key   string
	Label string
	Help  string
	Type  FieldType
	// Fields describe each record of a FieldList output, keyed inside
	// the record.
	Fields []OutputField
}

// OutputValue is the value of the output key in an answer decoded from
// JSON (maps and slices): its dotted path walked through the objects.
func OutputValue(answer any, key string) (any, bool) {
	v := answer
	for _, part := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// OperationKind says how a platform runs an operation.
type OperationKind string

const (
	// KindAction is a plain request and its answer (waits inline if needed).
	KindAction OperationKind = "action"
	// KindCallbackAction creates a job with a platform-supplied callback_url
	// and resumes when imgflow POSTs the finished job there.
	KindCallbackAction OperationKind = "callback_action"
	// KindPollingTrigger lists recent items; the platform dedupes on "id".
	KindPollingTrigger OperationKind = "polling_trigger"
	// KindHookTrigger subscribes a platform URL with POST /v1/hooks and
	// receives {"type","timestamp","data"} deliveries.
	KindHookTrigger OperationKind = "hook_trigger"
)

// Operation is one action or trigger.
type Operation struct {
	Key         string // snake_case, unique in the catalog
	Noun        string // what it is about: "Job", "Account"
	Label       string // "Compress Image"
	Description string // one sentence, shown under the label
	Help        string // longer guidance: limits, what happens on failure
	Kind        OperationKind
	Method      string // HTTP method
	Path        string // path with {placeholders}, relative to the base URL
	// Query holds fixed query parameters (like wait=25).
	Query   map[string]string
	Inputs  []Field
	Outputs []OutputField
	// Sample is a realistic answer (for triggers: one item), as it would be
	// JSON-encoded by the server.
	Sample any
	// File, when set, says that a completed job in the answer carries the
	// compressed image, which the platforms hand on as their own file type
	// (a Zapier file, Make's fileName/data pair, Power Automate file
	// content, n8n binary data) next to result.file_url.
	File *FileOutput
	// Upload, when set, says the operation also takes the image as a file
	// (a multipart part or file content) instead of a URL or base64.
	Upload *FileInput
	// HookEvents, for a hook trigger, are the events its POST /v1/hooks
	// subscribes: one, always sent as the body's event; or several, one of
	// which the trigger's required `event` input picks (its choices).
	HookEvents []string
}

// FileOutput describes the compressed file of a job-returning operation:
// the name platforms give it and where its parts are in the answer.
type FileOutput struct {
	Key   string // the output a platform adds: "file"
	Label string
	Help  string
	// Path gives the bytes with the key (never a URL that carries it), for
	// as long as the result is stored, even after file_url has expired.
	Path string
	// IDKey, NameKey, TypeKey and SizeKey are output keys of the job: its
	// id (Path's {id}), the file's name, MIME type and size.
	IDKey, NameKey, TypeKey, SizeKey string
	// DataKey is the output holding the bytes in base64 when DataQuery is
	// added to the request (platforms whose file type is inline bytes).
	DataKey   string
	DataQuery map[string]string
}

// FileInput describes an image handed over as a file.
type FileInput struct {
	Key   string // the multipart part's field name: "file"
	Label string
	Help  string
	// NameKey is the input field that names the file (its filename).
	NameKey string
}

// Auth is how a platform connects: the key field, the request that tests
// it, and the label the connection gets from the test's answer.
type Auth struct {
	Fields []Field
	// Header carries the key (also accepted: Authorization: Bearer KEY).
	Header     string
	TestMethod string
	TestPath   string
	// ConnectionLabel is built from fields of the test answer: each
	// {{field}} is replaced.
	ConnectionLabel string
	TestOutputs     []OutputField
	TestSample      *connector.AccountAnswer
}

// Hook subscription endpoints (used by hook triggers).
const (
	HooksPath = "/v1/hooks"
	HookPath  = "/v1/hooks/{id}"
)

// Catalog is everything the platforms offer for imgflow.
type Catalog struct {
	Name        string
	Description string
	Auth        Auth
	Actions     []Operation
	Triggers    []Operation
	// Manage holds operations for people and tools rather than flows (the
	// web console's delivery log and redelivery): the API serves them and
	// OpenAPI lists them, the platforms' files leave them out.
	Manage []Operation
}

// Operations returns the actions followed by the triggers.
func (c *Catalog) Operations() []Operation {
	ops := make([]Operation, 0, len(c.Actions)+len(c.Triggers))
	ops = append(ops, c.Actions...)
	return append(ops, c.Triggers...)
}

// Operation returns the operation with this key, or nil; Manage
// operations included.
func (c *Catalog) Operation(key string) *Operation {
	for _, op := range append(c.Operations(), c.Manage...) {
		if op.Key == key {
			return &op
		}
	}
	return nil
}
