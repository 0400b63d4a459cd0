package worker

import (
	"path"
	"strings"

	"github.com/imgflow/imgflow/connector"
)

// filenameFor returns name (its base only) with the extension of mimeType,
// or "image" plus that extension when name is empty, its invisible
// characters removed: the compressed file has
// the input's format, whatever the input's name claimed.
func filenameFor(name, mimeType string) string {
	name = connector.WithoutInvisible(name) // a fetched name is not checked at creation
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" {
		name = ""
	}
	ext := connector.ExtensionOf(mimeType)
	if name == "" {
		return "image" + ext
	}
	if ext == "" {
		return name
	}
	cur := strings.ToLower(path.Ext(name))
	if cur == ext || (ext == ".jpg" && cur == ".jpeg") {
		return name
	}
	return strings.TrimSuffix(name, path.Ext(name)) + ext
}
