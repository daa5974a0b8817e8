package script

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// TestFileErrorsQuoteNothing points file at files that are not scripts (secrets): the
// errors, at Init and at a reload, name the file and a position and quote none of it.
func TestFileErrorsQuoteNothing(t *testing.T) {
	const secret = "S3CRETxyz"
	for _, tt := range []struct {
		name, content string
	}{
		{"shadow", "root:$6$" + secret + ":19000:0:99999:7:::\n"},
		{"env", "PASSWORD=" + secret + "\n"},
		{"bare token", secret + "\n"},
		{"yaml", "token: " + secret + "\n"},
		{"json", `{"token": "` + secret + `"}`},
		{"key", "-----BEGIN PRIVATE KEY-----\nMII" + secret + "\n-----END PRIVATE KEY-----\n"},
		{"declared twice", "let " + secret + " = 1; let " + secret + " = 2;"},
		{"regexp", "x = /" + secret + "(/"},
		{"label", "break " + secret + ";"},
		{"call", "var q = '" + secret + "'; q();"},
		{"property", "null['" + secret + "'];"},
		{"thrown", "throw new Error('" + secret + "');"},
		{"thrown object", "throw {name: '" + secret + "', message: '" + secret + "'};"},
		{"meta", "function f() { new.t" + secret + "; }"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(file, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			d, _, err := driver.Open(context.Background(), Name, map[string]string{"file": file})
			if err == nil {
				_ = d.Close()
				t.Fatal("opened")
			}
			if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), file) {
				t.Fatalf("error %q; want the file named and nothing of its text", err)
			}
		})
	}
	// A reload of the same: lastReloadError and the error quote nothing either.
	file := filepath.Join(t.TempDir(), "s.js")
	if err := os.WriteFile(file, []byte(`function read(key) { return "v1"; }`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := open(t, map[string]string{"file": file, "watch": "5ms"})
	if err := os.WriteFile(file, []byte("PASSWORD="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.DriverStats()["reloadErrors"] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no reload error within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e := d.ConnectionInfo()["lastReloadError"]; strings.Contains(e, secret) || !strings.Contains(e, "ReferenceError") {
		t.Fatalf("lastReloadError = %q; want the kind of error and nothing of the text", e)
	}
}

// TestSyntaxErrorsOfScripts keeps the parser's messages that quote nothing, for a file
// that is a script with a mistake, and every message for the source option (the user's
// own text).
func TestSyntaxErrorsOfScripts(t *testing.T) {
	for _, tt := range []struct {
		name, content, want string
	}{
		{"unexpected end", "function read(key) {\n  return 1;\n", "s.js:3:1: SyntaxError: Unexpected end of input"},
		{"unexpected token", "function read(key) { return 1 +; }", "s.js:1:32: SyntaxError: Unexpected token ;"},
		{"declared twice", "let a = 1; let a = 2; function read(key) {}", "s.js:1:16: SyntaxError (message withheld"},
		{"top-level exception", "var x = null; x.y;\nfunction read(key) {}", "s.js:1:17: TypeError (message withheld"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "s.js")
			if err := os.WriteFile(file, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			d, _, err := driver.Open(context.Background(), Name, map[string]string{"file": file})
			if err == nil {
				_ = d.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q; want %q", err, tt.want)
			}
		})
	}
	_, _, err := driver.Open(context.Background(), Name, map[string]string{"source": "let a = 1; let a = 2; function read(key) {}"})
	if err == nil || !strings.Contains(err.Error(), "Identifier 'a' has already been declared") {
		t.Fatalf("source: %v; want goja's whole message", err)
	}
}

// TestFileNotAScriptFile points file at what is not a script file: a directory, a
// device, a file too large. Each is refused naming file, before any of it is read
// (/dev/zero would be read until the process runs out of memory).
func TestFileNotAScriptFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.js")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxScriptSize + 1); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, file, want string }{
		{"directory", dir, "not a regular file"},
		{"too large", big, "larger than 8 MiB"},
	}
	if runtime.GOOS != "windows" {
		cases = append(cases, struct{ name, file, want string }{"device", "/dev/zero", "not a regular file"})
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			d, _, err := driver.Open(context.Background(), Name, map[string]string{"file": tt.file})
			if err == nil {
				_ = d.Close()
				t.Fatal("opened")
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok || len(fes) == 0 || fes[0].Field != "file" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v; want a field error naming file, saying %q", err, tt.want)
			}
		})
	}
}
