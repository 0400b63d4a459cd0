package guard

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// fakeResolver answers from a map; unknown names do not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	names, ok := f[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var addrs []netip.Addr
	for _, n := range names {
		addrs = append(addrs, netip.MustParseAddr(n))
	}
	return addrs, nil
}

var resolver = fakeResolver{
	"images.example":        {"93.184.216.34"},
	"internal.example":      {"10.1.2.3"},
	"mixed.example":         {"93.184.216.34", "127.0.0.1"},
	"mixed-private.example": {"127.0.0.1", "192.168.0.10"},
	"v6.example":            {"2606:4700:4700::1111"},
}

func TestCheckURLRefuses(t *testing.T) {
	cases := []struct {
		url, message string
	}{
		{"http://127.0.0.1/a.png", "URL points to a private or loopback address (127.0.0.1)"},
		{"http://10.0.0.1:8080/a.png", "URL points to a private or loopback address (10.0.0.1)"},
		{"http://169.254.169.254/latest/meta-data/", "URL points to a private or loopback address (169.254.169.254)"},
		{"http://[::1]:5678/a.png", "URL points to a private or loopback address (::1)"},
		{"http://[::ffff:127.0.0.1]/a.png", "URL points to a private or loopback address (127.0.0.1)"},
		{"http://0.0.0.0/", "URL points to a private or loopback address (0.0.0.0)"},
		{"http://internal.example/a.png", "URL points to a private or loopback address (10.1.2.3)"},
		{"https://mixed.example/a.png", "URL points to a private or loopback address (127.0.0.1)"},
		{"ftp://images.example/a.png", "URL must start with http:// or https://"},
		{"file:///etc/passwd", "URL must start with http:// or https://"},
		{"images.example/a.png", "URL must start with http:// or https://"},
		{"http:///a.png", "URL has no host"},
		{"http://user:pw@images.example/a.png", "URL must not carry a user name or password"},
		{"http://%zz/", "URL is not a valid URL"},
	}
	for _, c := range cases {
		err := CheckURL(context.Background(), c.url, Policy{}, resolver)
		if connector.ErrorCodeOf(err) != connector.EURLREFUSED || connector.ErrorMessage(err) != c.message {
			t.Errorf("%s: expected %s %q, got %v", c.url, connector.EURLREFUSED, c.message, err)
		}
	}
}

func TestCheckURLReportsAnUnresolvableHostAsAFetchError(t *testing.T) {
	err := CheckURL(context.Background(), "http://nowhere.example/a.png", Policy{}, resolver)
	want := "URL host nowhere.example could not be resolved"
	if connector.ErrorCodeOf(err) != connector.EFETCH || connector.ErrorMessage(err) != want {
		t.Errorf("expected %s %q, got %v", connector.EFETCH, want, err)
	}
}

func TestCheckURLRefusesLocalhostWithTheSystemResolver(t *testing.T) {
	err := CheckURL(context.Background(), "http://localhost:8080/a.png", Policy{}, nil)
	if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
		t.Errorf("expected %s, got %v", connector.EURLREFUSED, err)
	}
}

func TestCheckURLAllowsPublicHosts(t *testing.T) {
	for _, u := range []string{
		"https://images.example/a.png?sig=x",
		"http://images.example:8080/a.png",
		"https://v6.example/a.png",
		"http://93.184.216.34/a.png",
	} {
		if err := CheckURL(context.Background(), u, Policy{}, resolver); err != nil {
			t.Errorf("%s: expected nil, got %v", u, err)
		}
	}
}

func TestCheckURLInDevAllowsLoopbackButStillChecksTheForm(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:5678/a.png", "http://[::1]:5678/a.png", "http://localhost:5678/a.png"} {
		if err := CheckURL(context.Background(), u, Loopback(), nil); err != nil {
			t.Errorf("%s: expected nil, got %v", u, err)
		}
	}
	for _, u := range []string{"ftp://127.0.0.1/a.png", "http://user:pw@127.0.0.1/a.png", "http://127.0.0.1:99999/a.png"} {
		if err := CheckURL(context.Background(), u, Loopback(), resolver); connector.ErrorCodeOf(err) != connector.EURLREFUSED {
			t.Errorf("%s: expected %s, got %v", u, connector.EURLREFUSED, err)
		}
	}
}

func TestCheckURLInDevRefusesANameThatResolvesToAPrivateAddress(t *testing.T) {
	for _, u := range []string{"http://internal.example/a.png", "https://mixed-private.example/a.png"} {
		err := CheckURL(context.Background(), u, Loopback(), resolver)
		if connector.ErrorCodeOf(err) != connector.EURLREFUSED {
			t.Errorf("%s: expected %s, got %v", u, connector.EURLREFUSED, err)
		}
	}
}

func TestCheckURLAllowsANamedHostOnItsPort(t *testing.T) {
	p := mustParse("internal.example:8080,10.9.0.0/16")
	for _, u := range []string{"http://internal.example:8080/a.png", "http://10.9.1.2/a.png", "https://10.9.1.2:8443/a.png"} {
		if err := CheckURL(context.Background(), u, p, resolver); err != nil {
			t.Errorf("%s: expected nil, got %v", u, err)
		}
	}
	// The scheme's port is the one compared: http:// is 80, not 8080.
	for _, u := range []string{"http://internal.example/a.png", "https://internal.example/a.png", "http://10.8.0.1/a.png"} {
		if err := CheckURL(context.Background(), u, p, resolver); connector.ErrorCodeOf(err) != connector.EURLREFUSED {
			t.Errorf("%s: expected %s, got %v", u, connector.EURLREFUSED, err)
		}
	}
}

func TestForFieldNamesTheField(t *testing.T) {
	err := ForField(CheckURL(context.Background(), "http://10.0.0.1/", Policy{}, resolver), "image_url")
	e := connector.AsError(err)
	want := "image_url points to a private or loopback address (10.0.0.1)"
	if e.Code != connector.EURLREFUSED || e.Message != want {
		t.Fatalf("expected %s %q, got %v", connector.EURLREFUSED, want, err)
	}
	if len(e.Details) != 1 || e.Details[0].Field != "image_url" {
		t.Errorf("expected details for image_url, got %+v", e.Details)
	}
	other := errors.New("boom")
	if got := ForField(other, "image_url"); got != other {
		t.Errorf("expected other errors unchanged, got %v", got)
	}
}
