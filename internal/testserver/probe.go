package testserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The readiness probes speak just enough of each store's protocol to know it serves
// requests (an open port is not enough: Redis may be loading, PostgreSQL starting up), and
// do it without the client libraries so a test binary that needs one store does not link
// every driver.

// dialProbe connects to addr with ctx's deadline applied to the whole exchange.
func dialProbe(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	}
	return c, nil
}

// lineProbe sends a text command and checks the first reply line's prefix.
func lineProbe(ctx context.Context, addr, cmd, wantPrefix string) error {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := io.WriteString(c, cmd); err != nil {
		return fmt.Errorf("send %q: %w", strings.TrimSpace(cmd), err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read reply to %q: %w", strings.TrimSpace(cmd), err)
	}
	if !strings.HasPrefix(line, wantPrefix) {
		return fmt.Errorf("reply to %q: %q", strings.TrimSpace(cmd), strings.TrimSpace(line))
	}
	return nil
}

// redisReady sends PING; a loading server answers -LOADING, which is not ready.
func redisReady(ctx context.Context, addr string) error {
	return lineProbe(ctx, addr, "PING\r\n", "+PONG")
}

// redisClusterReady assigns every slot to the node on first start (nodes.conf keeps them
// across restarts) and waits for CLUSTER INFO to report cluster_state:ok.
func redisClusterReady(ctx context.Context, addr string) error {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	// An error reply ("slot is already busy") after a restart is expected and ignored.
	if _, err := io.WriteString(c, "CLUSTER ADDSLOTSRANGE 0 16383\r\n"); err != nil {
		return fmt.Errorf("send CLUSTER ADDSLOTSRANGE: %w", err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		return fmt.Errorf("read CLUSTER ADDSLOTSRANGE reply: %w", err)
	}
	if _, err := io.WriteString(c, "CLUSTER INFO\r\n"); err != nil {
		return fmt.Errorf("send CLUSTER INFO: %w", err)
	}
	head, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("read CLUSTER INFO reply: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") || n > 1<<16 {
		return fmt.Errorf("CLUSTER INFO reply: %q", strings.TrimSpace(head))
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("read CLUSTER INFO body: %w", err)
	}
	if !strings.Contains(string(body), "cluster_state:ok") {
		return errors.New("cluster_state is not ok yet")
	}
	return nil
}

// memcachedReady asks for the version in the text protocol.
func memcachedReady(ctx context.Context, addr string) error {
	return lineProbe(ctx, addr, "version\r\n", "VERSION ")
}

// postgresReady runs the startup handshake as user postgres (trust auth) until the server
// reports ReadyForQuery; while it starts up it answers with an error message instead.
func postgresReady(ctx context.Context, addr string) error {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	params := "user\x00postgres\x00database\x00postgres\x00\x00"
	msg := make([]byte, 8, 8+len(params))
	binary.BigEndian.PutUint32(msg[0:4], uint32(8+len(params)))
	binary.BigEndian.PutUint32(msg[4:8], 3<<16) // protocol 3.0
	msg = append(msg, params...)
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("send startup message: %w", err)
	}
	r := bufio.NewReader(c)
	for {
		typ, body, err := readPGMessage(r)
		if err != nil {
			return fmt.Errorf("read startup reply: %w", err)
		}
		switch typ {
		case 'Z': // ReadyForQuery
			_, _ = c.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
			return nil
		case 'E':
			return fmt.Errorf("server error: %s", pgErrorText(body))
		case 'R':
			if len(body) >= 4 && binary.BigEndian.Uint32(body) != 0 {
				return fmt.Errorf("server asks for authentication (method %d); trust auth expected", binary.BigEndian.Uint32(body))
			}
		}
	}
}

func readPGMessage(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
	if n < 0 || n > 1<<20 {
		return 0, nil, fmt.Errorf("bad message length %d", n+4)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return hdr[0], body, nil
}

// pgErrorText extracts the message field ('M') of an ErrorResponse.
func pgErrorText(body []byte) string {
	for _, f := range strings.Split(string(body), "\x00") {
		if len(f) > 1 && f[0] == 'M' {
			return f[1:]
		}
	}
	return "unknown error"
}

// CQL native protocol v4 opcodes used by the Cassandra probe.
const (
	cqlOpError     = 0x00
	cqlOpStartup   = 0x01
	cqlOpReady     = 0x02
	cqlOpOptions   = 0x05
	cqlOpSupported = 0x06
)

// cassandraReady runs OPTIONS then STARTUP over CQL protocol v4; READY means the node
// accepts client sessions.
func cassandraReady(ctx context.Context, addr string) error {
	c, err := dialProbe(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if err := writeCQLFrame(c, 0, cqlOpOptions, nil); err != nil {
		return fmt.Errorf("send OPTIONS: %w", err)
	}
	op, body, err := readCQLFrame(r)
	if err != nil {
		return fmt.Errorf("read OPTIONS reply: %w", err)
	}
	if op != cqlOpSupported {
		return fmt.Errorf("OPTIONS reply: %s", cqlReplyText(op, body))
	}
	// STARTUP body: a string map with one entry, CQL_VERSION=3.0.0.
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 1)
	for _, s := range []string{"CQL_VERSION", "3.0.0"} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	if err := writeCQLFrame(c, 1, cqlOpStartup, b); err != nil {
		return fmt.Errorf("send STARTUP: %w", err)
	}
	op, body, err = readCQLFrame(r)
	if err != nil {
		return fmt.Errorf("read STARTUP reply: %w", err)
	}
	if op != cqlOpReady {
		return fmt.Errorf("STARTUP reply: %s", cqlReplyText(op, body))
	}
	return nil
}

func writeCQLFrame(w io.Writer, stream uint16, op byte, body []byte) error {
	hdr := make([]byte, 9, 9+len(body))
	hdr[0] = 0x04 // request, protocol v4
	binary.BigEndian.PutUint16(hdr[2:4], stream)
	hdr[4] = op
	binary.BigEndian.PutUint32(hdr[5:9], uint32(len(body)))
	_, err := w.Write(append(hdr, body...))
	return err
}

func readCQLFrame(r *bufio.Reader) (byte, []byte, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	if hdr[0]&0x80 == 0 {
		return 0, nil, errors.New("frame is not a response")
	}
	n := binary.BigEndian.Uint32(hdr[5:9])
	if n > 1<<20 {
		return 0, nil, fmt.Errorf("bad frame length %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return hdr[4], body, nil
}

// cqlReplyText describes an unexpected reply; ERROR bodies are [int code][string message].
func cqlReplyText(op byte, body []byte) string {
	if op == cqlOpError && len(body) >= 6 {
		n := int(binary.BigEndian.Uint16(body[4:6]))
		if 6+n <= len(body) {
			return fmt.Sprintf("error 0x%04x: %s", binary.BigEndian.Uint32(body[0:4]), body[6:6+n])
		}
	}
	return fmt.Sprintf("opcode 0x%02x", op)
}
