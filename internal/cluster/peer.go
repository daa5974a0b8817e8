package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// peer calls one node's REST API with the fleet's token. The API is the peer protocol:
// its request and response shapes are public, so the few this package sends are declared
// here rather than imported from the server (which imports this package).
type peer struct {
	base  string        // http://host:port or https://host:port
	token func() string // the token in force: it rotates
	hc    *http.Client
	// refused, when set, is why this node is not called at all (plain http off
	// loopback): every call fails with it before anything is sent.
	refused error
}

func newPeer(addr string, token func() string, hc *http.Client) *peer {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + addr
	}
	return &peer{base: strings.TrimRight(base, "/"), token: token, hc: hc}
}

// PeerError is a node's refusal of a call: its HTTP status and the problem's detail.
type PeerError struct {
	Status int
	Detail string
}

func (e *PeerError) Error() string {
	if e.Detail == "" {
		return http.StatusText(e.Status)
	}
	return e.Detail
}

// call sends in (if not nil) as JSON and decodes the answer into out (if not nil).
func (p *peer) call(ctx context.Context, method, path string, in, out any) error {
	return p.command(ctx, runRef{}, method, path, in, out)
}

// command is call on behalf of a coordinator's run (as): the node admits a state-changing
// call only when no other run holds it.
func (p *peer) command(ctx context.Context, as runRef, method, path string, in, out any) error {
	if p.refused != nil {
		return fmt.Errorf("%s %s: %w", method, path, p.refused)
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if tok := p.token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if as.coordinator != "" {
		req.Header.Set(HeaderCoordinator, as.coordinator)
		req.Header.Set(HeaderRun, as.run)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, scrubURLError(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var prob struct {
			Detail string `json:"detail"`
			Errors []struct {
				Message  string `json:"message"`
				Location string `json:"location"`
			} `json:"errors"`
		}
		pe := &PeerError{Status: resp.StatusCode}
		if json.Unmarshal(b, &prob) == nil {
			pe.Detail = prob.Detail
			for _, e := range prob.Errors {
				pe.Detail += "; " + strings.TrimPrefix(e.Location+": ", ": ") + e.Message
			}
		}
		return fmt.Errorf("%s %s: %w", method, path, pe)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// scrubURLError keeps a url.Error's operation and cause but not its URL: the address is
// said by the caller, and a URL may carry what it should not.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
