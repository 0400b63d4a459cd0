package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// failureCause says in a few words why a request got no answer, so that
// the delivery log and the job's callback status tell the receiver's owner
// what to fix: nothing listening, a name that does not resolve, a
// certificate the sender cannot trust, a connection dropped. It never
// returns internals beyond the address that was dialled.
func failureCause(err error) string {
	var dnsErr *net.DNSError
	var certInvalid x509.CertificateInvalidError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	var recordHeader tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return fmt.Sprintf("DNS: host name %s not found", dnsErr.Name)
		}
		if dnsErr.IsTimeout {
			return fmt.Sprintf("DNS: lookup of %s timed out", dnsErr.Name)
		}
		return fmt.Sprintf("DNS: lookup of %s failed", dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused" + atAddr(err) + " (nothing listens there)"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the receiver" + atAddr(err)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable" + atAddr(err)
	case errors.As(err, &unknownAuthority):
		return "TLS: certificate signed by an unknown authority"
	case errors.As(err, &hostname):
		return "TLS: certificate is not valid for " + hostname.Host
	case errors.As(err, &certInvalid):
		return "TLS: certificate is not valid (" + certInvalid.Error() + ")"
	case errors.As(err, &verify):
		return "TLS: certificate could not be verified"
	case errors.As(err, &recordHeader) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http has no error type for the second form.
		return "TLS: the receiver does not speak TLS on this port (is it http://?)"
	case errors.As(err, &alert):
		return "TLS: handshake refused by the receiver (" + alert.Error() + ")"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the receiver closed the connection without an answer"
	}
	return "network error"
}

// atAddr is " at host:port" from the dial error in err, "" without one.
func atAddr(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		return " at " + op.Addr.String()
	}
	return ""
}
