package cassandra

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// TestNextResumesCutFrame checks that a leader that stops reading in the middle of a
// reply frame (its deadline passed) leaves the frame whole for the next leader, whether
// the frame fits the read buffer or is read in parts.
func TestNextResumesCutFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		body int
		cut  int // bytes of the frame sent before the first leader gives up
	}{
		{"header cut", 100, 4},
		{"body cut", 100, headerLen + 30},
		{"large body cut", 100 << 10, headerLen + 70<<10},
		{"large header cut", 100 << 10, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			defer server.Close()
			body := bytes.Repeat([]byte("v"), tc.body)
			frame := make([]byte, headerLen, headerLen+len(body))
			frame[0] = 0x80 | byte(protoVersion)
			binary.BigEndian.PutUint16(frame[2:], 7)
			frame[4] = byte(primitive.OpCodeResult)
			binary.BigEndian.PutUint32(frame[5:], uint32(len(body)))
			frame = append(frame, body...)
			mc := &muxConn{nc: client, rd: bufio.NewReaderSize(client, 64<<10)}
			// net.Pipe's writes wait for the reads: the writes run beside the leaders.
			wrote := make(chan error, 2)
			go func() {
				_, err := server.Write(frame[:tc.cut])
				wrote <- err
			}()
			// The first leader's deadline passes: its retry gives up.
			_ = client.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			giveUp := func(error) bool { return false }
			if _, _, _, err := mc.next(giveUp); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("first read: %v; want a deadline error", err)
			}
			_ = client.SetReadDeadline(time.Time{})
			go func() {
				_, err := server.Write(frame[tc.cut:])
				wrote <- err
			}()
			stream, opcode, got, err := mc.next(giveUp)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := <-wrote; err != nil {
					t.Fatal(err)
				}
			}
			if stream != 7 || opcode != primitive.OpCodeResult || !bytes.Equal(got, body) {
				t.Errorf("next leader read stream %d opcode %v, %d bytes; want stream 7, RESULT, the %d bytes sent", stream, opcode, len(got), len(body))
			}
		})
	}
}
