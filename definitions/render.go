package definitions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// Platforms in the order Render returns their files.
var Platforms = []string{"zapier", "n8n", "make", "powerautomate", "openapi"}

// File is one definition file of one platform.
type File struct {
	Platform string // "zapier", "n8n", "make", "powerautomate" or "openapi"
	Name     string // file name inside the platform's folder
	Data     []byte
}

// Path is where the file goes below an output directory: platform/name.
func (f File) Path() string { return f.Platform + "/" + f.Name }

// renderer renders the catalog for one platform.
type renderer func(c *catalog.Catalog, baseURL string) ([]File, error)

var renderers = map[string]renderer{
	"zapier":        renderZapier,
	"n8n":           renderN8n,
	"make":          renderMake,
	"powerautomate": renderPowerAutomate,
	"openapi":       renderOpenAPIFiles,
}

// Render returns every platform's definition files for a server reachable
// at baseURL (scheme and host, optionally a path; no trailing slash needed),
// sorted by platform (in Platforms order) and then by name.
func Render(baseURL string) ([]File, error) {
	base, err := cleanBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := catalog.Default()
	var all []File
	for _, p := range Platforms {
		files, err := renderers[p](c, base)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", p, err)
		}
		sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
		all = append(all, files...)
	}
	return all, nil
}

// Platform returns the files of one platform, or nil for an unknown name.
func Platform(files []File, platform string) []File {
	var out []File
	for _, f := range files {
		if f.Platform == platform {
			out = append(out, f)
		}
	}
	return out
}

// OpenAPI returns the OpenAPI 3 document of the whole HTTP API for a server
// reachable at baseURL.
func OpenAPI(baseURL string) ([]byte, error) {
	base, err := cleanBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	return encodeJSON(openAPIDocument(catalog.Default(), base))
}

func cleanBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want an absolute http(s) URL such as https://imgflow.example.com", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q: must not have a query or fragment", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// encodeJSON is the one JSON encoding of every file: sorted keys, two-space
// indent, no HTML escaping (so JavaScript in Zapier sources stays readable),
// trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// generic turns a typed value (a catalog sample) into maps, slices and
// json.Numbers, as it would look to a JSON client.
func generic(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("definitions: sample does not encode: %v", err))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

// sampleValue is the value of output key in the operation's sample (or the
// failed-job sample for error fields), nil when neither has it.
func sampleValue(op *catalog.Operation, key string) any {
	if v, ok := catalog.OutputValue(generic(op.Sample), key); ok {
		return v
	}
	if _, isJob := op.Sample.(*connector.Job); isJob {
		if v, ok := catalog.OutputValue(generic(catalog.SampleFailedJob()), key); ok {
			return v
		}
	}
	return nil
}

// withQuery appends fixed query parameters in sorted order.
func withQuery(path string, q map[string]string) string {
	if len(q) == 0 {
		return path
	}
	v := url.Values{}
	for k, val := range q {
		v.Set(k, val)
	}
	return path + "?" + v.Encode()
}

func fileOf(platform, name string, v any) (File, error) {
	b, err := encodeJSON(v)
	if err != nil {
		return File{}, fmt.Errorf("%s/%s: %w", platform, name, err)
	}
	return File{Platform: platform, Name: name, Data: b}, nil
}

type obj = map[string]any
