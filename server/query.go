package server

import (
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// The query of the listing routes, read one way for all of them.

// pageLimit reads ?limit=N, a whole number from 1 to max; def when absent.
func pageLimit(c echo.Context, def, max int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, fieldError("limit", "must be a whole number from 1 to "+strconv.Itoa(max))
	}
	return n, nil
}

// idCursor reads ?cursor= of a listing paged by id: only the canonical
// form the API hands out, since {…} or upper case would sort elsewhere and
// page from the wrong place.
func idCursor(c echo.Context) (string, error) {
	cursor := c.QueryParam("cursor")
	if cursor != "" {
		if id, err := uuid.Parse(cursor); err != nil || id.String() != cursor {
			return "", fieldError("cursor", "is not a cursor this API returned")
		}
	}
	return cursor, nil
}

// idPage reads the page of a listing of jobs or batches: ?limit= (20 by
// default, at most 100) and ?cursor= (idCursor).
func idPage(c echo.Context) (limit int, cursor string, err error) {
	if limit, err = pageLimit(c, 20, 100); err != nil {
		return 0, "", err
	}
	cursor, err = idCursor(c)
	return limit, cursor, err
}
