package workload

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
)

// The validation header. A validated value is
//
//	"NDB1" | base64url(keyHash[8] seq[8] flags[1] check[4]) | payload[HeaderSize:]
//
// where "NDB" is the magic and '1' the format version, keyHash is xxhash64 of the key, seq
// is the writer's sequence (see Tracker.Seq), flags is reserved (0), and check is the low
// 32 bits of xxhash64(keyHash | seq | flags | crc32c(payload after the header)), all
// little-endian. The payload gets a CRC-32C (hardware-accelerated, and guaranteed to catch
// short bursts of damage); the header fields are folded in with xxhash rather than fed to
// the CRC, because hash/crc32 moves a stack buffer to the heap and the codec must not
// allocate. Any change to the header fields goes unnoticed with probability 2^-32.
//
// The header is printable ASCII (base64url without padding, 21 bytes -> 28 characters) and
// the pooled payload is alphanumeric like NDBench's, so a validated value is still a plain
// string: drivers that store text (CQL text columns, JSON documents, HTTP bodies, Redis
// strings viewed in a console) need no special casing. That costs 11 bytes over a binary
// header, and the header still fits in 32 bytes.
const (
	HeaderSize = len(headerMagic) + headerB64Len

	headerMagic  = "NDB1"
	headerRawLen = 8 + 8 + 1 + 4
	headerB64Len = (headerRawLen*8 + 5) / 6
)

var (
	b64        = base64.RawURLEncoding
	castagnoli = crc32.MakeTable(crc32.Castagnoli) // read-only after init
)

// Check is the verdict of CheckValue.
type Check uint8

// The verdicts of CheckValue.
const (
	// CheckOK: the header is intact, the checksum matches and the value belongs to the key.
	CheckOK Check = iota
	// CheckCorrupt: the value starts with the header magic but is truncated, its header is
	// not valid base64, or its checksum does not match: bytes changed in flight or at rest.
	CheckCorrupt
	// CheckWrongKey: an intact value whose key hash is another key's: the store returned
	// (or a write stored) a value under the wrong key.
	CheckWrongKey
	// CheckNoHeader: the value has no validation header, e.g. it was written with
	// validation off or by NDBench. Whether that is a failure is the caller's call.
	CheckNoHeader
	numChecks
)

var checkNames = [numChecks]string{"ok", "corrupt", "wrong_key", "no_header"}

// String returns the name used in counters and reports.
func (c Check) String() string {
	if c < numChecks {
		return checkNames[c]
	}
	return "unknown"
}

// EncodeValue writes into dst[:0] a value of len(payload) bytes (at least HeaderSize) whose
// first HeaderSize bytes are the validation header for key and seq and whose rest is
// payload[HeaderSize:], and returns it. Replacing rather than prefixing keeps value sizes
// exactly as configured. It allocates only when cap(dst) is too small.
func EncodeValue(dst []byte, key []byte, seq uint64, payload []byte) []byte {
	n := max(len(payload), HeaderSize)
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	var raw [headerRawLen]byte
	binary.LittleEndian.PutUint64(raw[0:8], xxhash.Sum64(key))
	binary.LittleEndian.PutUint64(raw[8:16], seq)
	raw[16] = 0
	body := dst[HeaderSize:]
	if len(payload) > HeaderSize {
		copy(body, payload[HeaderSize:])
	}
	binary.LittleEndian.PutUint32(raw[17:21], checksum(&raw, body))
	copy(dst, headerMagic)
	b64.Encode(dst[len(headerMagic):HeaderSize], raw[:])
	return dst
}

// CheckValue verifies value against key and returns the verdict and, for CheckOK and
// CheckWrongKey, the write sequence from the header. It never panics and never allocates,
// whatever value holds.
func CheckValue(key []byte, value []byte) (Check, uint64) {
	if len(value) < len(headerMagic) || string(value[:len(headerMagic)]) != headerMagic {
		return CheckNoHeader, 0
	}
	if len(value) < HeaderSize {
		return CheckCorrupt, 0
	}
	var raw [headerRawLen]byte
	if n, err := b64.Decode(raw[:], value[len(headerMagic):HeaderSize]); err != nil || n != headerRawLen {
		return CheckCorrupt, 0
	}
	if checksum(&raw, value[HeaderSize:]) != binary.LittleEndian.Uint32(raw[17:21]) || raw[16] != 0 {
		return CheckCorrupt, 0
	}
	seq := binary.LittleEndian.Uint64(raw[8:16])
	if binary.LittleEndian.Uint64(raw[0:8]) != xxhash.Sum64(key) {
		return CheckWrongKey, seq
	}
	return CheckOK, seq
}

// checksum covers the header fields raw[:17] and body (see HeaderSize).
func checksum(raw *[headerRawLen]byte, body []byte) uint32 {
	var b [headerRawLen]byte
	copy(b[:17], raw[:17])
	binary.LittleEndian.PutUint32(b[17:], crc32.Checksum(body, castagnoli))
	return uint32(xxhash.Sum64(b[:]))
}
