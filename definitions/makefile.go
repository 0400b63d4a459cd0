package definitions

import (
	"fmt"
	"sort"
	"strings"

	"github.com/imgflow/imgflow/catalog"
)

// Make moves files as a pair: fileName (semantic file:name) and data (a
// buffer, semantic file:data). A module whose output carries the pair fills
// the next module's file picker by itself; a module whose input takes it
// accepts any earlier module's file. These are the names Make's own apps
// use; the catalog's FileOutput and FileInput say where they come from.
const (
	makeFileName = "fileName"
	makeFileData = "data"
)

// makeFilePair is the pair as interface items (outputs) or parameters
// (inputs), labelled for the catalog's file.
func makeFilePair(label, help string) []any {
	return []any{
		obj{"name": makeFileName, "label": "File Name", "type": "filename", "semantic": "file:name",
			"help": "Name of the file, with its extension."},
		obj{"name": makeFileData, "label": label, "type": "buffer", "semantic": "file:data", "help": help},
	}
}

// makeModuleParams are the module's inputs, plus the file pair when the
// operation takes an upload; inputs the file output fixes (include=data)
// are left out.
func makeModuleParams(op *catalog.Operation) []any {
	var inputs []catalog.Field
	for _, f := range op.Inputs {
		if op.File != nil && f.In == catalog.InQuery && op.File.DataQuery[f.Key] != "" {
			continue
		}
		inputs = append(inputs, f)
	}
	params := makeParams(inputs)
	if op.Upload != nil {
		pair := makeFilePair(op.Upload.Label, op.Upload.Help)
		pair[0].(obj)["help"] = "Name of the image file, such as photo.png; " + makeFileData + " is its content."
		params = append(params, pair...)
	}
	return params
}

// makeModuleInterface is the output's interface, plus the file pair.
func makeModuleInterface(op *catalog.Operation) []any {
	out := makeInterface(op.Outputs)
	if op.File != nil {
		out = append(out, makeFilePair(op.File.Label, op.File.Help)...)
	}
	return out
}

// makeSample is the operation's sample, with the file pair as Make shows it.
func makeSample(op *catalog.Operation) any {
	sample := generic(op.Sample)
	if m, ok := sample.(obj); ok && op.File != nil {
		name, _ := catalog.OutputValue(sample, op.File.NameKey)
		m[makeFileName] = name
		size, _ := catalog.OutputValue(sample, op.File.SizeKey)
		// How Make shows a buffer: its size and first bytes (the sample
		// is a JPEG).
		m[makeFileData] = fmt.Sprintf("IMTBuffer(%v, binary, ffd8ffe000104a464946000101)", size)
	}
	return sample
}

// makeOutput maps an answer (the job, with the file's base64 when asked
// for) to the module's output: the job without the base64, and the file
// pair decoded from it.
func makeOutput(op *catalog.Operation) any {
	if op.File == nil {
		return "{{body}}"
	}
	f := op.File
	dataParent, dataChild, _ := strings.Cut(f.DataKey, ".")
	out := obj{}
	for _, o := range op.Outputs {
		top, _, _ := strings.Cut(o.Key, ".")
		if top == dataParent {
			out[top] = "{{omit(body." + top + "; \"" + dataChild + "\")}}"
		} else {
			out[top] = "{{body." + top + "}}"
		}
	}
	out[makeFileName] = "{{body." + f.NameKey + "}}"
	out[makeFileData] = "{{if(body." + f.DataKey + "; toBinary(body." + f.DataKey + "; \"base64\"); undefined)}}"
	return out
}

// makeQuery is the operation's fixed query plus its input query fields,
// and what its file output needs.
func makeQuery(op *catalog.Operation) obj {
	qs := obj{}
	for k, v := range op.Query {
		qs[k] = v
	}
	for _, f := range op.Inputs {
		if f.In == catalog.InQuery {
			qs[f.Key] = "{{ifempty(parameters." + f.Key + "; undefined)}}"
		}
	}
	if op.File != nil {
		for k, v := range op.File.DataQuery {
			qs[k] = v
		}
	}
	return qs
}

// makeUploadRequest is the multipart request of an operation that takes
// the file pair: the file as its part, the other body inputs as text parts.
// Make sends it only when data is mapped; otherwise the JSON request goes.
func makeUploadRequest(op *catalog.Operation, path string) obj {
	u := op.Upload
	body := obj{u.Key: obj{
		"value":   "{{parameters." + makeFileData + "}}",
		"options": obj{"filename": "{{ifempty(parameters." + makeFileName + "; \"image\")}}"},
	}}
	for _, f := range op.Inputs {
		if f.In != "" && f.In != catalog.InBody {
			continue
		}
		switch f.Key {
		case u.NameKey:
			body[f.Key] = "{{ifempty(parameters." + f.Key + "; ifempty(parameters." + makeFileName + "; undefined))}}"
		default:
			body[f.Key] = "{{ifempty(parameters." + f.Key + "; undefined)}}"
		}
	}
	return obj{
		"condition": "{{if(parameters." + makeFileData + "; true; false)}}",
		"url":       path,
		"method":    op.Method,
		"qs":        makeQuery(op),
		"type":      "multipart/form-data",
		"body":      body,
		"response":  obj{"output": makeOutput(op)},
	}
}

// makeTriggerCommunication turns a delivery into the module's bundle: the
// job itself, or, with a file output, the job fetched with its file.
// getJob is the operation that reads one job by its id.
func makeTriggerCommunication(hook, getJob *catalog.Operation) obj {
	if hook.File == nil {
		return obj{"output": "{{body.data}}"}
	}
	path := strings.Replace(getJob.Path, "{"+hook.File.IDKey+"}", "{{encodeURL(body.data."+hook.File.IDKey+")}}", 1)
	qs := obj{}
	keys := make([]string, 0, len(hook.File.DataQuery))
	for k := range hook.File.DataQuery {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		qs[k] = hook.File.DataQuery[k]
	}
	return obj{
		"url":      path,
		"method":   "GET",
		"qs":       qs,
		"response": obj{"output": makeOutput(hook)},
	}
}
