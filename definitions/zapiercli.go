package definitions

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/imgflow/imgflow/catalog"
)

// jsRaw is JavaScript written into index.js as it is: a name the module
// defines, where the JSON app could only hold data.
type jsRaw string

// zapierIndexJS writes the CLI app: the hydrator that stashes a job's
// compressed file, withFile that puts its dehydrated pointer on completed
// jobs, and the app definition with every {"source"} as a real function.
func zapierIndexJS(c *catalog.Catalog, base string, app obj) ([]byte, error) {
	f := catalog.CompressedFile()
	for _, op := range c.Operations() {
		if op.File != nil {
			f = op.File
			break
		}
	}
	get := func(key string) string { return "job." + key }
	filePath := jsString(base + strings.Split(f.Path, "{id}")[0])
	if !strings.Contains(f.Path, "{id}") {
		return nil, fmt.Errorf("zapier: file path %q has no {id}", f.Path)
	}
	fileTail := jsString(strings.Split(f.Path, "{id}")[1])
	var b bytes.Buffer
	b.WriteString(`// imgflow for Zapier as a Zapier CLI app. Generated from catalog.Default()
// (definitions/zapier.go, zapiercli.go) by: imgflow definitions; do not edit.
// Deploy: npm install && zapier register "imgflow" && zapier push (README.md).
'use strict';

// The compressed file as Zapier's own file: a completed job's ` + jsString(f.Key) + ` output is a
// dehydrated pointer, and when a later step uses it Zapier runs this hydrator,
// which streams the bytes from GET ` + f.Path + ` into Zapier's file store.
// The request carries the key as the ` + c.Auth.Header + ` header (requestTemplate), so no
// URL holds it, and it works for as long as imgflow keeps the result, even
// after the signed file_url has expired.
const hydrators = {
  compressedFile: async (z, bundle) => {
    const { id, filename, mime_type: mimeType, size } = bundle.inputData;
    const response = await z.request({
      method: 'GET',
      url: ` + filePath + ` + encodeURIComponent(id) + ` + fileTail + `,
      raw: true,
      skipThrowForStatus: true,
    });
    if (response.status === 404) {
      throw new z.errors.Error(` + "`" + `The compressed file of job ${id} is no longer stored: compress the image again.` + "`" + `, 'FileExpired', 404);
    }
    return z.stashFile(response, Number(size) || undefined, filename, mimeType);
  },
};

// withFile adds the ` + jsString(f.Key) + ` output to a completed job; other jobs pass unchanged.
const withFile = (z, job) => {
  if (job && job.status === 'completed' && job.result) {
    job[` + jsString(f.Key) + `] = z.dehydrateFile(hydrators.compressedFile, {
      id: ` + get(f.IDKey) + `,
      filename: ` + get(f.NameKey) + `,
      mime_type: ` + get(f.TypeKey) + `,
      size: ` + get(f.SizeKey) + `,
    });
  }
  return job;
};

module.exports = `)
	if err := writeJS(&b, app, ""); err != nil {
		return nil, err
	}
	b.WriteString(";\n")
	return b.Bytes(), nil
}

// writeJS writes v as a JavaScript expression: JSON, except that
// {"source", "args"} becomes an async function and jsRaw is written as is.
func writeJS(b *bytes.Buffer, v any, indent string) error {
	inner := indent + "  "
	switch v := v.(type) {
	case jsRaw:
		b.WriteString(string(v))
	case obj:
		if src, ok := v["source"].(string); ok {
			args, _ := v["args"].([]string)
			b.WriteString("async function (" + strings.Join(args, ", ") + ") {\n")
			for _, line := range strings.Split(src, "\n") {
				if line != "" {
					b.WriteString(inner + line)
				}
				b.WriteByte('\n')
			}
			b.WriteString(indent + "}")
			return nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteString("{\n")
		for _, k := range keys {
			b.WriteString(inner + jsString(k) + ": ")
			if err := writeJS(b, v[k], inner); err != nil {
				return err
			}
			b.WriteString(",\n")
		}
		b.WriteString(indent + "}")
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteString("[\n")
		for _, e := range v {
			b.WriteString(inner)
			if err := writeJS(b, e, inner); err != nil {
				return err
			}
			b.WriteString(",\n")
		}
		b.WriteString(indent + "]")
	default:
		// Leaves, and typed values (samples) as JSON: re-read generically
		// so that nested maps get the same sorted layout.
		raw, err := encodeJSON(v)
		if err != nil {
			return err
		}
		raw = bytes.TrimSpace(raw)
		if raw[0] == '{' || raw[0] == '[' {
			return writeJS(b, generic(v), indent)
		}
		b.Write(raw)
	}
	return nil
}
