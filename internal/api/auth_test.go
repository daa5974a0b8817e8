package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
)

// TestBearerScheme: the auth scheme is case-insensitive (RFC 7235 section 2.1, RFC 6750),
// with one or more spaces before the token; anything else is 401.
func TestBearerScheme(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		header string
		want   int
	}{
		{"Bearer " + testToken, 200},
		{"bearer " + testToken, 200},
		{"BEARER " + testToken, 200},
		{"bEaReR " + testToken, 200},
		{"Bearer   " + testToken, 200},
		{"Bearer\t" + testToken, 200},
		{"Bearer " + testToken + " ", 200},
		{"Basic " + testToken, 401},
		{"Bearer" + testToken, 401},
		{"Bearer", 401},
		{"Bearer ", 401},
		{testToken, 401},
		{"Bearer wrong", 401},
		{"Bearer " + testToken + "x", 401},
		{"Bearer " + testToken + " extra", 401},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/status", nil)
		req.Header.Set("Authorization", tt.header)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Authorization %q: %d, want %d", tt.header, resp.StatusCode, tt.want)
		}
	}
}

// TestTokenThatCanNeverMatchIsRefused: a blank token, or one with blanks around it or
// control characters in it, could never be sent back; the server refuses to start with
// it rather than locking everyone out, and the error does not repeat the token.
func TestTokenThatCanNeverMatchIsRefused(t *testing.T) {
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	defer inst.Close()
	for _, tok := range []string{" ", "   ", "\t", "\n", " s3cretTok", "s3cretTok ", "s3cret\nTok", "s3cret\x00Tok"} {
		if err := CheckToken(tok); err == nil {
			t.Errorf("CheckToken(%q) accepted it", tok)
		} else if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "token") {
			t.Errorf("CheckToken(%q): error %q should name the token without showing it", tok, err)
		}
		if srv, err := New(Options{Instance: inst, Token: tok}); err == nil {
			srv.Close()
			t.Errorf("New accepted token %q", tok)
		}
	}
	for _, tok := range []string{"", "q8Zt1mWc0yPfL4sJvRn2Ka", "a.b-c_d~e+f/g=h.i-j_k~l", "with inner space and more words"} {
		if err := CheckToken(tok); err != nil {
			t.Errorf("CheckToken(%q) = %v, want ok", tok, err)
		}
	}
}

// TestWeakTokenIsRefused: a token is all that guards a node reachable from a network, so
// one shorter than 16 random bytes in base64, or a short pattern repeated, is refused;
// the error says why and how to make a good one, and never repeats the token.
func TestWeakTokenIsRefused(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  string // in the error; "" for accepted
	}{
		{"x", "1 characters, fewer than the 22"},
		{"s3cret", "6 characters"},
		{"test-token-0123", "15 characters"},
		{"q8Zt1mWc0yPfL4sJvRn2K", "21 characters"}, // one short of base64(16 bytes)
		{"ééééééééééééééééééééé", "21 characters"}, // characters, not bytes
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "short pattern repeated"},
		{"abababababababababababab", "short pattern repeated"},
		{"s3cret!!s3cret!!s3cret!!s3c", "short pattern repeated"},
		{"0000000000000000000000000000000000000001", ""},
		{"q8Zt1mWc0yPfL4sJvRn2Ka", ""},
		{"WmFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3", ""},
	} {
		err := CheckToken(tc.token)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckToken(%q) = %v, want ok", tc.token, err)
		case tc.want == "":
		case err == nil:
			t.Errorf("CheckToken(%q) accepted it", tc.token)
		case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "openssl rand -base64 24"):
			t.Errorf("CheckToken(%q) = %q, want it to say %q and how to make one", tc.token, err, tc.want)
		case strings.Contains(err.Error(), tc.token):
			t.Errorf("CheckToken(%q): the error repeats the token", tc.token)
		}
	}
}
