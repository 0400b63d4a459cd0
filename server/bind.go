package server

import (
	"mime"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// Binding a creating request (POST /v1/jobs, its dry run, POST
// /v1/batches): one start for all of them, and one switch over the kinds
// of body they take.

// bodyReaders are how a route reads each kind of body; raw nil refuses
// the image itself as the body (a batch has several).
type bodyReaders[T any] struct {
	json      func(c echo.Context) (T, error)
	multipart func(c echo.Context, boundary string) (T, error)
	raw       func(c echo.Context) (T, error)
}

// readBody reads a body by its Content-Type: JSON, multipart with a
// boundary, or (where the route takes it) the image itself; any other
// type is 415.
func readBody[T any](c echo.Context, r bodyReaders[T]) (T, error) {
	contentType := c.Request().Header.Get(echo.HeaderContentType)
	mediaType, params, _ := mime.ParseMediaType(contentType)
	switch {
	case isJSON(contentType):
		return r.json(c)
	case mediaType == "multipart/form-data" && params["boundary"] != "":
		return r.multipart(c, params["boundary"])
	case r.raw != nil && isRawImage(mediaType):
		return r.raw(c)
	}
	accepted := "application/json or multipart/form-data"
	if r.raw != nil {
		accepted = "application/json, multipart/form-data or the image's own type, such as image/png"
	}
	var zero T
	return zero, connector.Errorf(connector.EMEDIATYPE, "Content-Type must be %s (got %q)", accepted, contentType)
}

// keyedBody is a bound body that may carry the caller's key (api_key).
type keyedBody interface{ bodyKey() string }

func (in *jobRequest) bodyKey() string   { return in.APIKey }
func (in *batchRequest) bodyKey() string { return in.APIKey }

// bindRequest is the start every creating route shares: a key in a header
// is checked before the body is read (an unknown key costs the server no
// memory), a body slot is taken (bodies.go), read binds and checks the
// body, and the caller's key is the header's or the body's. release frees
// the slot (at once for a job; a batch holds it until its items are
// stored); it is released already when err is set.
func bindRequest[T keyedBody](s *Server, c echo.Context, read func(echo.Context) (T, error)) (key string, in T, release func(), err error) {
	if key := headerKey(c); key != "" {
		if err := s.authenticate(c, key); err != nil {
			return "", in, nil, err
		}
	}
	acquired, err := s.bodies.acquire(c, headerKey(c))
	if err != nil {
		return "", in, nil, err
	}
	release = sync.OnceFunc(acquired)
	if in, err = read(c); err != nil {
		release()
		return "", in, nil, slowBodyError(c, err)
	}
	if key, err = requestKey(c, in.bodyKey()); err != nil {
		release()
		return "", in, nil, err
	}
	return key, in, release, nil
}
