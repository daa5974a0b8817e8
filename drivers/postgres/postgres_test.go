package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ndbench/ndbench/driver"
)

func TestRegisteredSchema(t *testing.T) {
	def, ok := driver.Lookup("postgres")
	if !ok {
		t.Fatal("driver postgres is not registered")
	}
	schema, err := driver.Schema(def.NewOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]driver.Option{}
	for _, o := range schema {
		got[o.Name] = o
	}
	for _, name := range []string{"dsn", "poolSize", "table", "createSchema", "mode", "execMode", "connectTimeout"} {
		if _, ok := got[name]; !ok {
			t.Errorf("option %s missing from schema", name)
		}
	}
	if !got["dsn"].Secret {
		t.Error("dsn must be secret so it is redacted wherever options are shown")
	}
	if got["table"].Default != "ndbench" || got["createSchema"].Default != "true" {
		t.Errorf("defaults: table=%q createSchema=%q", got["table"].Default, got["createSchema"].Default)
	}
}

func TestOptionValidation(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]string
		badOpts []string // option names expected in field errors; empty means valid
	}{
		{"defaults", nil, nil},
		{"schema-qualified table", map[string]string{"table": "bench.kv_1"}, nil},
		{"table with space", map[string]string{"table": "kv; DROP TABLE x"}, []string{"table"}},
		{"table starting with digit", map[string]string{"table": "1kv"}, []string{"table"}},
		{"three-part table", map[string]string{"table": "a.b.c"}, []string{"table"}},
		{"empty table", map[string]string{"table": ""}, []string{"table"}},
		{"empty dsn", map[string]string{"dsn": " "}, []string{"dsn"}},
		{"bad exec mode", map[string]string{"execMode": "pipeline"}, []string{"execMode"}},
		{"pool size negative", map[string]string{"poolSize": "-1"}, []string{"poolSize"}},
		{"pool size zero follows the workers", map[string]string{"poolSize": "0"}, nil},
		{"connect timeout too short", map[string]string{"connectTimeout": "1ms"}, []string{"connectTimeout"}},
		{"simple protocol", map[string]string{"execMode": "simple_protocol"}, nil},
		{"bad mode", map[string]string{"mode": "fast"}, []string{"mode"}},
		{"direct without prepared statements", map[string]string{"mode": "direct", "execMode": "exec"}, []string{"mode"}},
		{"pool with simple protocol", map[string]string{"mode": "pool", "execMode": "simple_protocol"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := driver.NewOptions("postgres", tt.values)
			if err == nil {
				err = opts.(*Options).Validate()
			}
			if len(tt.badOpts) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok {
				t.Fatalf("want field errors for %v, got %v", tt.badOpts, err)
			}
			for _, want := range tt.badOpts {
				found := false
				for _, fe := range fes {
					found = found || fe.Field == want
				}
				if !found {
					t.Errorf("no field error for %s in %v", want, fes)
				}
			}
		})
	}
}

func TestModeAuto(t *testing.T) {
	for _, tt := range []struct{ mode, execMode, want string }{
		{"auto", "cache_statement", "direct"},
		{"auto", "describe_exec", "direct"},
		{"auto", "exec", "pool"},
		{"auto", "simple_protocol", "pool"},
		{"pool", "cache_statement", "pool"},
		{"direct", "cache_describe", "direct"},
	} {
		o := Options{Mode: tt.mode, ExecMode: tt.execMode}
		if got := o.mode(); got != tt.want {
			t.Errorf("mode=%s execMode=%s resolves to %s, want %s", tt.mode, tt.execMode, got, tt.want)
		}
	}
}

func TestInitRejectsBadOptionsWithoutConnecting(t *testing.T) {
	// NewOptions rejects the table itself; Init must as well, for options built in code.
	if _, err := driver.NewOptions("postgres", map[string]string{"table": "bad name"}); err == nil {
		t.Fatal("NewOptions accepted a bad table")
	}
	opts, err := driver.NewOptions("postgres", nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.(*Options).Table = "bad name"
	d := &Driver{}
	err = d.Init(context.Background(), opts)
	if _, ok := driver.AsFieldErrors(err); !ok {
		t.Fatalf("Init with a bad table: want field errors, got %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close after failed Init: %v", err)
	}
}

func TestRedactDSN(t *testing.T) {
	tests := []struct {
		dsn, want string
	}{
		{"postgres://bob:s3cret@127.0.0.1:5432/db?sslmode=disable", "postgres://bob@127.0.0.1:5432/db?sslmode=disable"},
		{"postgresql://bob@127.0.0.1/db", "postgresql://bob@127.0.0.1/db"},
		{"postgres://bob@127.0.0.1/db?password=s3cret&sslmode=disable", "postgres://bob@127.0.0.1/db?password=xxxxx&sslmode=disable"},
		{"postgres://bob:s3/c@ret@127.0.0.1/db", "postgres://bob@127.0.0.1/db"},
		{"host=127.0.0.1 user=bob password=s3cret dbname=db", "host=127.0.0.1 user=bob password=xxxxx dbname=db"},
		{"host=127.0.0.1 password='s3 cret' user=bob", "host=127.0.0.1 password=xxxxx user=bob"},
		{"host=127.0.0.1 sslpassword=s3cret", "host=127.0.0.1 sslpassword=xxxxx"},
		{"host=127.0.0.1 PASSWORD = s3cret", "host=127.0.0.1 PASSWORD=xxxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			got := RedactDSN(tt.dsn)
			if got != tt.want {
				t.Errorf("RedactDSN = %q, want %q", got, tt.want)
			}
			if strings.Contains(got, "s3") {
				t.Errorf("password leaked: %q", got)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want driver.Class
	}{
		{&pgconn.PgError{Code: "08006"}, driver.ClassUnavailable},
		{&pgconn.PgError{Code: "57P01"}, driver.ClassUnavailable},
		{&pgconn.PgError{Code: "57P03"}, driver.ClassUnavailable},
		{&pgconn.PgError{Code: "53300"}, driver.ClassUnavailable},
		{&pgconn.ConnectError{Config: &pgconn.Config{}}, driver.ClassUnavailable},
		{fmt.Errorf("connect: %w", &pgconn.PgError{Code: "53300", Message: "too many connections for role \"x\""}), driver.ClassUnavailable},
		{&pgconn.PgError{Code: "53200"}, driver.ClassThrottled},
		{&pgconn.PgError{Code: "40001"}, driver.ClassThrottled},
		{&pgconn.PgError{Code: "40P01"}, driver.ClassThrottled},
		{&pgconn.PgError{Code: "57014"}, driver.ClassTimeout},
		{&pgconn.PgError{Code: "22001"}, driver.ClassRejected},
		{&pgconn.PgError{Code: "23505"}, driver.ClassRejected},
		{&pgconn.PgError{Code: "42P01"}, driver.ClassRejected},
		{&pgconn.PgError{Code: "XX000"}, driver.ClassOther},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), driver.ClassTimeout},
		{errors.New("something odd"), driver.ClassOther},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestTooManyConnectionsNamesTheLimits: a server out of connection slots is unavailable,
// and the message says which settings decide it, so a user knows what to change.
func TestTooManyConnectionsNamesTheLimits(t *testing.T) {
	d := &Driver{opts: Options{PoolSize: 48}}
	for _, msg := range []string{"sorry, too many clients already", "too many connections for role \"x\"", "too many connections for database \"db\""} {
		err := d.fail("connect to db", &pgconn.PgError{Severity: "FATAL", Code: "53300", Message: msg})
		if c := driver.Classify(err); c != driver.ClassUnavailable {
			t.Errorf("%s: class %v, want unavailable", msg, c)
		}
		for _, want := range []string{"max_connections", "poolSize=48", msg} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %s", msg, err, want)
			}
		}
	}
}

func TestFailScrubsPassword(t *testing.T) {
	d := &Driver{password: "hunter2"}
	err := d.fail("connect", errors.New("server said: bad password hunter2"))
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("password in error text: %v", err)
	}
}

// TestScanStatement: a key column that sorts by bytes is scanned as it is (its index
// serves the range); any other collation, or one the catalog did not give, is scanned
// under COLLATE "C", so the keys are those of byte order whatever the table's locale.
func TestScanStatement(t *testing.T) {
	for _, tc := range []struct {
		provider, locale string
		indexed          bool
	}{
		{"c", "C", true},
		{"c", "POSIX", true},
		{"c", "C.UTF-8", true},
		{"c", "C.utf8", true},
		{"b", "C.UTF-8", true},
		{"c", "en_US.UTF-8", false},
		{"i", "und", false},
		{"i", "C", false}, // ICU's root order under any name is not byte order
		{"", "", false},
	} {
		sql, order := scanStatement(`"t"`, tc.provider, tc.locale)
		collated := strings.Contains(sql, `COLLATE "C"`)
		if collated == tc.indexed || strings.Contains(order, "key index") != tc.indexed {
			t.Errorf("%s:%s: %s (%s); want indexed %v", tc.provider, tc.locale, sql, order, tc.indexed)
		}
		if !strings.Contains(sql, `FROM "t" WHERE key`) || !strings.HasSuffix(sql, "LIMIT $2") {
			t.Errorf("%s:%s: %s", tc.provider, tc.locale, sql)
		}
	}
}
