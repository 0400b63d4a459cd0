package fetch

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// filenameOf takes the file name from Content-Disposition, else from the
// last segment of the final URL's path; "" when neither has one. Directory
// parts are dropped, so a name never carries a path.
func filenameOf(resp *http.Response) string {
	if cd := resp.Header.Get("Content-Disposition"); cd != "" {
		if _, params, err := mime.ParseMediaType(cd); err == nil {
			if name := baseName(params["filename"]); name != "" {
				return name
			}
		}
	}
	if resp.Request != nil && resp.Request.URL != nil {
		return baseName(resp.Request.URL.Path)
	}
	return ""
}

func baseName(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if strings.HasSuffix(p, "/") {
		return ""
	}
	name := path.Base(p)
	if name == "." || name == "/" || name == ".." {
		return ""
	}
	return name
}
