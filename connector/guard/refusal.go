package guard

import (
	"errors"

	"github.com/imgflow/imgflow/connector"
)

// refusal is the cause inside every *connector.Error guard returns: the
// complaint without its subject, so that ForField can name the field.
type refusal struct {
	complaint string // "points to a private or loopback address (127.0.0.1)"
	cause     error
}

func (r *refusal) Error() string { return "URL " + r.complaint }
func (r *refusal) Unwrap() error { return r.cause }

func refuse(cause error, complaint string) *connector.Error {
	r := &refusal{complaint: complaint, cause: cause}
	return &connector.Error{Code: connector.EURLREFUSED, Message: r.Error(), Err: r}
}

// ForField rewords a refusal from CheckURL or from the guarded transport
// (found anywhere in err's chain) so that it names the input field, e.g.
// "image_url points to a private or loopback address (10.0.0.1)", with the
// field in Details. Any other error comes back unchanged.
func ForField(err error, field string) error {
	var r *refusal
	if !errors.As(err, &r) {
		return err
	}
	msg := field + " " + r.complaint
	return &connector.Error{
		Code:    connector.EURLREFUSED,
		Message: msg,
		Details: []connector.FieldError{{Field: field, Message: msg}},
		Err:     r,
	}
}
