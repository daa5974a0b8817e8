// Package crossorigin tells requests sent by a page on another site from requests a user
// or a program made, so that routes which change a node's state can refuse the former
// whatever their HTTP method.
//
// Go's http.CrossOriginProtection lets GET, HEAD and OPTIONS through, on the grounds that
// safe methods change nothing. NDBench's routes change state on GET (driver/start,
// config/set?numReaders=64), so any page's <img src> could start load against any store
// from a user's browser. A Policy applies the same test to every method; a server applies
// it to each route that declares it changes state.
package crossorigin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrCrossSite is wrapped by every refusal, for callers that map errors onto statuses.
var ErrCrossSite = errors.New("cross-site request refused")

// Policy decides whether a request was sent by a page on another site. The zero value
// and a nil *Policy trust no other origin.
type Policy struct {
	trusted map[string]bool
}

// New returns a policy that also accepts requests from the given origins (scheme://host
// with an optional port, as browsers send them in the Origin header). An origin that is
// not of that form is an error naming it.
func New(trusted []string) (*Policy, error) {
	p := &Policy{trusted: make(map[string]bool, len(trusted))}
	for _, o := range trusted {
		if err := checkOrigin(o); err != nil {
			return nil, err
		}
		p.trusted[o] = true
	}
	return p, nil
}

// checkOrigin accepts what a browser sends as Origin: scheme and host, nothing more.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		shown := o
		if err == nil && u.User != nil {
			shown = u.Redacted() // never echo a password, even one put in the wrong place
		}
		return fmt.Errorf("origin %q: want scheme://host[:port] with nothing after it, e.g. https://ui.example.com", shown)
	}
	return nil
}

// Trusted reports whether origin is one the policy was given.
func (p *Policy) Trusted(origin string) bool {
	return p != nil && origin != "" && p.trusted[origin]
}

// Check returns nil when r was not sent by a page on another site, and an error wrapping
// ErrCrossSite when it was, whatever r's method:
//
//   - Sec-Fetch-Site (sent by every current browser) is authoritative: same-origin and
//     none (the user typed the address or opened a bookmark) pass; same-site (another
//     port or subdomain) and cross-site are refused.
//   - Without it, an Origin header must name the host the request was sent to; "null"
//     (sandboxed frames, some redirects) never does.
//   - A request with neither header did not come from a browser page (curl, scripts,
//     other nodes) and passes.
//
// Requests from a trusted origin always pass.
func (p *Policy) Check(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if p.Trusted(origin) {
		return nil
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none":
		return nil
	case "":
		// An older browser, or no browser: the Origin header decides.
	default:
		return fmt.Errorf("%w: Sec-Fetch-Site is %q%s", ErrCrossSite, site, originText(origin))
	}
	if origin == "" {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return fmt.Errorf("%w: origin %q is not this server (%s)", ErrCrossSite, origin, r.Host)
}

func originText(origin string) string {
	if origin == "" {
		return ""
	}
	return fmt.Sprintf(", origin %q", origin)
}
