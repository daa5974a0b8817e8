package grpc

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ndbench/ndbench/driver"
)

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		field  string
	}{
		{map[string]string{"read": "KV.Get"}, "read"},
		{map[string]string{"write": "pkg.KV/Put/x"}, "write"},
		{map[string]string{"readRequest": "key=1"}, "readRequest"},
		{map[string]string{"metadata": "no colon here"}, "metadata"},
		{map[string]string{"conns": "0"}, "conns"},
	} {
		_, err := driver.NewOptions("grpc", tc.values)
		fes, ok := driver.AsFieldErrors(err)
		if !ok || len(fes) == 0 || fes[0].Field != tc.field || fes[0].Allowed == "" {
			t.Errorf("%v: got %v, want a field error on %s naming what is allowed", tc.values, err, tc.field)
		}
	}
	// A malformed secret is refused without showing it.
	_, err := driver.NewOptions("grpc", map[string]string{"authMetadata": "Bearer s3cr3t-token"})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("authMetadata without a name: %v", err)
	}
}

func TestParseMetadata(t *testing.T) {
	kv, err := parseMetadata("X-Tenant: bench | authorization: Bearer a:b\nx-b: 2")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x-tenant", "bench", "authorization", "Bearer a:b", "x-b", "2"}
	if fmt.Sprint(kv) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", kv, want)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want driver.Class
	}{
		{status.Error(codes.ResourceExhausted, "slow down"), driver.ClassThrottled},
		{status.Error(codes.Unavailable, "gone"), driver.ClassUnavailable},
		{status.Error(codes.DeadlineExceeded, "late"), driver.ClassTimeout},
		{status.Error(codes.InvalidArgument, "bad"), driver.ClassRejected},
		{status.Error(codes.Unauthenticated, "who"), driver.ClassRejected},
		{status.Error(codes.Internal, "oops"), driver.ClassOther},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), driver.ClassTimeout},
	} {
		if got := driver.Classify(classify(tc.err)); got != tc.want {
			t.Errorf("%v: class %v, want %v", tc.err, got, tc.want)
		}
	}
	if classify(nil) != nil {
		t.Fatal("classify(nil) != nil")
	}
}
