package crossorigin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCheck(t *testing.T) {
	p, err := New([]string{"https://ui.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	const host = "127.0.0.1:8080"
	tests := []struct {
		name, origin, site string
		refused            bool
	}{
		{"no browser headers (curl, scripts)", "", "", false},
		{"same-origin", "", "same-origin", false},
		{"same-origin with origin", "http://" + host, "same-origin", false},
		{"user typed the address", "", "none", false},
		{"origin equal to host, older browser", "http://" + host, "", false},
		{"cross-site with origin", "http://evil.com", "cross-site", true},
		{"cross-site without origin (img src)", "", "cross-site", true},
		{"same-site: another port of the same host", "http://127.0.0.1:9999", "same-site", true},
		{"origin only", "http://evil.com", "", true},
		{"origin null", "null", "", true},
		{"origin null, cross-site", "null", "cross-site", true},
		{"origin of another port, older browser", "http://127.0.0.1:9999", "", true},
		{"trusted origin, cross-site", "https://ui.example.com", "cross-site", false},
		{"trusted origin, older browser", "https://ui.example.com", "", false},
		{"look-alike of a trusted origin", "https://ui.example.com.evil.com", "cross-site", true},
	}
	for _, tt := range tests {
		// The point of the package: safe methods are checked too.
		for _, method := range []string{"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"} {
			r := httptest.NewRequest(method, "http://"+host+"/REST/ndbench/driver/start", nil)
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.site != "" {
				r.Header.Set("Sec-Fetch-Site", tt.site)
			}
			err := p.Check(r)
			if (err != nil) != tt.refused {
				t.Errorf("%s, %s: Check = %v, want refused %v", tt.name, method, err, tt.refused)
			}
			if err != nil && !errors.Is(err, ErrCrossSite) {
				t.Errorf("%s, %s: error %v does not wrap ErrCrossSite", tt.name, method, err)
			}
		}
	}
}

func TestNilPolicyTrustsNoOrigin(t *testing.T) {
	var p *Policy
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/", nil)
	r.Header.Set("Origin", "https://ui.example.com")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	if err := p.Check(r); err == nil {
		t.Fatal("nil policy let a cross-site request through")
	}
	if p.Trusted("https://ui.example.com") {
		t.Fatal("nil policy trusts an origin")
	}
}

func TestNewRejectsMalformedOrigins(t *testing.T) {
	for _, o := range []string{"*", "ui.example.com", "https://", "https://ui.example.com/", "https://ui.example.com/app", "https://u:p@ui.example.com", "null"} {
		if _, err := New([]string{o}); err == nil {
			t.Errorf("New(%q) accepted a malformed origin", o)
		}
	}
	if _, err := New([]string{"http://localhost:3000", "https://ui.example.com"}); err != nil {
		t.Errorf("New rejected valid origins: %v", err)
	}
}
