package driver

import "testing"

func TestShown(t *testing.T) {
	tests := []struct {
		secret      bool
		value, want string
	}{
		{false, "", ""},
		{true, "", ""},
		{true, "hunter2", Redacted},
		{false, "127.0.0.1:6379,10.0.0.2:6379", "127.0.0.1:6379,10.0.0.2:6379"},
		{false, "redis://u:pw@h:6379/0", "redis://u:xxxxx@h:6379/0"},
		{false, "redis://:pw@h", "redis://:xxxxx@h"},
		{false, "redis://u@h", "redis://u@h"}, // a user name alone is not a credential
		{false, "redis://u:p@ss/w#rd@h:6379", "redis://u:xxxxx@h:6379"},
		{false, "redis://a:pw1@h1,rediss://:pw2@h2", "redis://a:xxxxx@h1,rediss://:xxxxx@h2"},
		{false, "u:pw@h1:11211 v:pw@h2:11211", "u:xxxxx@h1:11211 v:xxxxx@h2:11211"},
		{false, "postgres://h/db?sslmode=disable&password=pw", "postgres://h/db?sslmode=disable&password=xxxxx"},
		{false, "https://h/x?api_key=k1&token=t1&n=1", "https://h/x?api_key=xxxxx&token=xxxxx&n=1"},
		{false, "host=h user=u password='p w' dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{false, "host=h password=pw sslpassword=pw2", "host=h password=xxxxx sslpassword=xxxxx"},
		{false, "someone@example.com", "someone@example.com"},
		// JSON a script or a request template carries, and credential headers.
		{false, `{"db": {"addrs": "h:1", "password": "pw"}, "api": {"token": "t\"k", "n": 1}}`, `{"db": {"addrs": "h:1", "password": "xxxxx"}, "api": {"token": "xxxxx", "n": 1}}`},
		{false, `{"apiKey":"k"}`, `{"apiKey":"xxxxx"}`},
		{false, "X-Tenant: a | Authorization: Bearer tok | x-api-key: k", "X-Tenant: a | Authorization: xxxxx | x-api-key: xxxxx"},
		{false, "authorization: Basic dXNlcjpwdw==", "authorization: xxxxx"},
		{false, `{"key": "k1", "tenant": "t"}`, `{"key": "k1", "tenant": "t"}`},
		{false, "T", "T"},
	}
	for _, tt := range tests {
		if got := Shown(tt.secret, tt.value); got != tt.want {
			t.Errorf("Shown(%v, %q) = %q, want %q", tt.secret, tt.value, got, tt.want)
		}
	}
}
