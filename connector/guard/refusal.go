package guard

import (
	"errors"

	"github.com/imgflow/imgflow/connector"
)

// refusal is the cause inside every *connector.Error guard returns: the
// complaint without its subject, so that ForField can name the field.
type refusal struct {
	code      connector.ErrorCode
	complaint string // "points to a private or loopback address (127.0.0.1)"
	retryable bool
	cause     error
}

func (r *refusal) Error() string { return "URL " + r.complaint }
func (r *refusal) Unwrap() error { return r.cause }

func refuse(cause error, complaint string) *connector.Error {
	return (&refusal{code: connector.EURLREFUSED, complaint: complaint, cause: cause}).asError("URL")
}

func (r *refusal) asError(subject string) *connector.Error {
	return &connector.Error{Code: r.code, Message: subject + " " + r.complaint, Retryable: r.retryable, Err: r}
}

// ForField rewords an error of CheckURL or of the guarded transport (found
// anywhere in err's chain) so that it names the input field, e.g.
// "image_url points to a private or loopback address (10.0.0.1)", with the
// field in Details; the code stays. Any other error comes back unchanged.
func ForField(err error, field string) error {
	var r *refusal
	if !errors.As(err, &r) {
		return err
	}
	e := r.asError(field)
	e.Details = []connector.FieldError{{Field: field, Message: e.Message}}
	return e
}
