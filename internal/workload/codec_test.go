package workload

import (
	"bytes"
	"testing"
)

func TestAppendKey(t *testing.T) {
	tests := []struct {
		prefix string
		idx    int64
		want   string
	}{
		{DefaultKeyPrefix, 0, "T0"},
		{DefaultKeyPrefix, 123, "T123"},
		{DefaultKeyPrefix, 1<<63 - 1, "T9223372036854775807"},
		{"", 7, "7"},
		{"user:", 42, "user:42"},
	}
	for _, tt := range tests {
		if got := string(AppendKey(nil, tt.prefix, tt.idx)); got != tt.want {
			t.Errorf("AppendKey(%q, %d) = %q, want %q", tt.prefix, tt.idx, got, tt.want)
		}
	}
	buf := make([]byte, 0, 32)
	if a := testing.AllocsPerRun(100, func() { buf = AppendKey(buf[:0], DefaultKeyPrefix, 123456789) }); a != 0 {
		t.Errorf("AppendKey allocates %v times with a big enough buffer", a)
	}
}

func payload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = alphanumeric[i%len(alphanumeric)]
	}
	return p
}

func TestEncodeValueRoundTrip(t *testing.T) {
	key := []byte("T42")
	for _, size := range []int{0, 1, HeaderSize - 1, HeaderSize, HeaderSize + 1, 128, 4096} {
		p := payload(size)
		v := EncodeValue(nil, key, 1234567, p)
		if want := max(size, HeaderSize); len(v) != want {
			t.Errorf("size %d: encoded %d bytes, want %d", size, len(v), want)
		}
		if len(p) > HeaderSize && !bytes.Equal(v[HeaderSize:], p[HeaderSize:]) {
			t.Errorf("size %d: payload after the header not preserved", size)
		}
		for i, c := range v {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("size %d: byte %d = %#x is not printable ASCII", size, i, c)
			}
		}
		if c, seq := CheckValue(key, v); c != CheckOK || seq != 1234567 {
			t.Errorf("size %d: CheckValue = %v, %d; want ok, 1234567", size, c, seq)
		}
	}
	if HeaderSize > 32 {
		t.Errorf("HeaderSize = %d, want <= 32", HeaderSize)
	}
}

func TestCheckValueDetectsDamage(t *testing.T) {
	key := []byte("T42")
	good := EncodeValue(nil, key, 99, payload(100))
	tests := []struct {
		name  string
		key   string
		value []byte
		want  Check
	}{
		{"intact", "T42", good, CheckOK},
		{"other key's value", "T43", good, CheckWrongKey},
		{"NDBench value", "T42", payload(100), CheckNoHeader},
		{"empty", "T42", nil, CheckNoHeader},
		{"magic only", "T42", []byte("NDB1"), CheckCorrupt},
		{"truncated header", "T42", good[:HeaderSize-1], CheckCorrupt},
		{"truncated payload", "T42", good[:len(good)-1], CheckCorrupt},
		{"extended payload", "T42", append(bytes.Clone(good), 'x'), CheckCorrupt},
		{"bad base64", "T42", append([]byte("NDB1!!!!"), good[8:]...), CheckCorrupt},
	}
	for _, tt := range tests {
		c, _ := CheckValue([]byte(tt.key), tt.value)
		if c != tt.want {
			t.Errorf("%s: CheckValue = %v, want %v", tt.name, c, tt.want)
		}
	}
	// Every single-byte change is caught: in the magic as a missing header, anywhere else
	// (key hash, seq, checksum, payload) as corruption.
	for i := range good {
		for _, flip := range []byte{0x01, 0x20} {
			v := bytes.Clone(good)
			v[i] ^= flip
			want := CheckCorrupt
			if i < len(headerMagic) {
				want = CheckNoHeader
			}
			if c, _ := CheckValue(key, v); c != want {
				t.Errorf("byte %d ^ %#x: CheckValue = %v, want %v", i, flip, c, want)
			}
		}
	}
}

func TestWrongKeyReportsSeq(t *testing.T) {
	v := EncodeValue(nil, []byte("T1"), 77, payload(64))
	if c, seq := CheckValue([]byte("T2"), v); c != CheckWrongKey || seq != 77 {
		t.Errorf("CheckValue = %v, %d; want wrong_key, 77", c, seq)
	}
}

func TestCodecDoesNotAllocate(t *testing.T) {
	key, p := []byte("T123456"), payload(1024)
	buf := make([]byte, 0, 2048)
	var v []byte
	if a := testing.AllocsPerRun(100, func() { v = EncodeValue(buf, key, 5, p) }); a != 0 {
		t.Errorf("EncodeValue: %v allocs", a)
	}
	if a := testing.AllocsPerRun(100, func() { CheckValue(key, v) }); a != 0 {
		t.Errorf("CheckValue: %v allocs", a)
	}
	bad := append([]byte("NDB1!"), v[5:]...)
	if a := testing.AllocsPerRun(100, func() { CheckValue(key, bad) }); a != 0 {
		t.Errorf("CheckValue on a corrupt header: %v allocs", a)
	}
}

func TestCheckString(t *testing.T) {
	for c, want := range map[Check]string{CheckOK: "ok", CheckCorrupt: "corrupt", CheckWrongKey: "wrong_key", CheckNoHeader: "no_header", 200: "unknown"} {
		if c.String() != want {
			t.Errorf("Check(%d).String() = %q, want %q", c, c.String(), want)
		}
	}
}

func FuzzCheckValue(f *testing.F) {
	f.Add([]byte("T1"), EncodeValue(nil, []byte("T1"), 1, payload(64)))
	f.Add([]byte("T1"), []byte("NDB1"))
	f.Add([]byte(""), []byte("NDB1AAAAAAAAAAAAAAAAAAAAAAAAAAAA"))
	f.Add([]byte("T2"), payload(10))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, _ := CheckValue(key, value) // must not panic
		if c >= numChecks {
			t.Fatalf("CheckValue returned %d", c)
		}
		// Whatever the payload, encoding it makes a value that checks out for its key.
		v := EncodeValue(nil, key, 12345, value)
		if c, seq := CheckValue(key, v); c != CheckOK || seq != 12345 {
			t.Fatalf("round trip: %v, %d", c, seq)
		}
	})
}

func BenchmarkEncodeValue(b *testing.B) {
	for _, size := range []int{128, 1024} {
		b.Run(itoa(size), func(b *testing.B) {
			key, p := []byte("T1234567"), payload(size)
			buf := make([]byte, 0, size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				buf = EncodeValue(buf, key, 42, p)
			}
		})
	}
}

func BenchmarkCheckValue(b *testing.B) {
	for _, size := range []int{128, 1024} {
		b.Run(itoa(size), func(b *testing.B) {
			key := []byte("T1234567")
			v := EncodeValue(nil, key, 42, payload(size))
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if c, _ := CheckValue(key, v); c != CheckOK {
					b.Fatal(c)
				}
			}
		})
	}
}

func itoa(n int) string { return string(AppendKey(nil, "", int64(n))) }
