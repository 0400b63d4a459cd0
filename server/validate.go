package server

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"

	"github.com/imgflow/imgflow/connector"
)

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	// Report JSON field names, which are what the caller sent.
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	// A file name is text a person reads and a file system stores: no
	// control characters (NUL, DEL, C1), no bidi controls that disguise
	// its extension, no invisible or line-breaking characters
	// (connector.IsInvisible), valid UTF-8. Refused here, before a job is made,
	// rather than failing later at the upstream.
	v.RegisterValidation("filename", func(fl validator.FieldLevel) bool {
		return badFilenameRune(fl.Field().String()) < 0
	})
	return v
}

// badFilenameRune is the byte offset of the first character a file name
// may not hold, or -1.
func badFilenameRune(name string) int {
	for i, r := range name {
		if r == utf8.RuneError || unicode.IsControl(r) || isBidiControl(r) || connector.IsInvisible(r) {
			return i
		}
	}
	return -1
}

// check validates in and turns failures into one EINVALID with a detail per
// field.
func (s *Server) check(in any) error {
	err := s.validate.Struct(in)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return err
	}
	e := &connector.Error{Code: connector.EINVALID}
	var names []string
	for _, fe := range verrs {
		e.Details = append(e.Details, connector.FieldError{Field: fe.Field(), Message: fieldMessage(fe)})
		names = append(names, fe.Field())
	}
	e.Message = "invalid " + strings.Join(names, ", ")
	if len(e.Details) == 1 {
		e.Message = e.Details[0].Field + ": " + e.Details[0].Message
	}
	return e
}

func fieldMessage(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required"
	case "url", "http_url":
		return "must be an absolute http or https URL"
	case "max":
		return fmt.Sprintf("must be at most %s characters", fe.Param())
	case "oneof":
		return "must be one of: " + strings.ReplaceAll(fe.Param(), " ", ", ")
	case "filename":
		name := fe.Value().(string)
		r, _ := utf8.DecodeRuneInString(name[badFilenameRune(name):])
		return fmt.Sprintf("must not contain control characters (found %U at byte %d)", r, badFilenameRune(name))
	}
	return "is invalid (" + fe.Tag() + ")"
}
