package server

import (
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// DefinitionFile is one connector definition file of one platform.
type DefinitionFile struct {
	Platform string
	Name     string
	Data     []byte
}

// DefinitionsRenderer renders every platform's files and the OpenAPI
// document for a public base URL (main wires the definitions package).
type DefinitionsRenderer func(baseURL string) (files []DefinitionFile, openAPI []byte, err error)

// renderedDefinitions renders once per process: the catalog and the public
// URL do not change while it runs.
type renderedDefinitions struct {
	once    sync.Once
	files   []DefinitionFile
	openAPI []byte
	err     error
}

func (s *Server) definitions() ([]DefinitionFile, []byte, error) {
	d := &s.defs
	d.once.Do(func() { d.files, d.openAPI, d.err = s.cfg.Definitions(s.cfg.PublicURL) })
	return d.files, d.openAPI, d.err
}

// openAPI is GET /openapi.json.
func (s *Server) openAPI(c echo.Context) error {
	_, doc, err := s.definitions()
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, doc)
}

type definitionLink struct {
	Platform string `json:"platform"`
	Name     string `json:"name"`
	URL      string `json:"url"`
}

func (s *Server) links(files []DefinitionFile) []definitionLink {
	out := make([]definitionLink, 0, len(files))
	for _, f := range files {
		out = append(out, definitionLink{f.Platform, f.Name, s.cfg.PublicURL + "/v1/definitions/" + f.Platform + "/" + f.Name})
	}
	return out
}

// definitionsIndex is GET /v1/definitions: every file with its URL.
func (s *Server) definitionsIndex(c echo.Context) error {
	files, _, err := s.definitions()
	if err != nil {
		return err
	}
	platforms := map[string]bool{}
	for _, f := range files {
		platforms[f.Platform] = true
	}
	names := make([]string, 0, len(platforms))
	for p := range platforms {
		names = append(names, p)
	}
	sort.Strings(names)
	return c.JSON(http.StatusOK, map[string]any{"platforms": names, "files": s.links(files)})
}

// definitionsPlatform is GET /v1/definitions/:platform: that platform's files.
func (s *Server) definitionsPlatform(c echo.Context) error {
	files, _, err := s.definitions()
	if err != nil {
		return err
	}
	var mine []DefinitionFile
	for _, f := range files {
		if f.Platform == c.Param("platform") {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return connector.Errorf(connector.ENOTFOUND, "no definitions for platform %q", c.Param("platform"))
	}
	return c.JSON(http.StatusOK, map[string]any{"platform": c.Param("platform"), "files": s.links(mine)})
}

// definitionsFile is GET /v1/definitions/:platform/:file: the file itself.
func (s *Server) definitionsFile(c echo.Context) error {
	files, _, err := s.definitions()
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Platform == c.Param("platform") && f.Name == c.Param("file") {
			ct := echo.MIMEApplicationJSON
			switch {
			case strings.HasSuffix(f.Name, ".js"):
				ct = "text/javascript; charset=utf-8"
			case !strings.HasSuffix(f.Name, ".json"):
				ct = "text/plain; charset=utf-8"
			}
			c.Response().Header().Set(echo.HeaderContentDisposition, mimeDisposition(path.Base(f.Name)))
			return c.Blob(http.StatusOK, ct, f.Data)
		}
	}
	return connector.Errorf(connector.ENOTFOUND, "no definition file %s/%s", c.Param("platform"), c.Param("file"))
}
