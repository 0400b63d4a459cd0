package worker

import (
	"net/http"
	"path"
	"strings"
)

// sniffImageType returns the MIME type of the four formats the compression
// API takes, or "".
func sniffImageType(b []byte) string {
	if len(b) >= 12 && string(b[4:8]) == "ftyp" {
		if brand := string(b[8:12]); brand == "avif" || brand == "avis" {
			return "image/avif"
		}
	}
	switch t := http.DetectContentType(b); t {
	case "image/png", "image/jpeg", "image/webp":
		return t
	}
	return ""
}

var extensions = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/webp": ".webp",
	"image/avif": ".avif",
}

// filenameFor returns name (its base only) with an extension that fits
// mime, or "image" plus that extension when name is empty.
func filenameFor(name, mime string) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" {
		name = ""
	}
	ext := extensions[mime]
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
