package dynamodb

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// sdkHTTPClient returns the client the SDK is given: c, with every request body hidden
// behind a plain Read and Close.
//
// Why: smithy-go wraps each request body in a reader that it closes as soon as Do
// returns, and whose WriteTo answers io.EOF, as an error, once closed. net/http's
// connection writer can still be reading the body then: after sending ContentLength
// bytes it copies the rest to io.Discard, to find bytes past the length, and io.Copy
// prefers WriteTo. When the response comes back before that copy runs (a busy CPU is
// enough), the writer gets the io.EOF, takes it for a failed request and closes the
// connection under the response the SDK is still reading: "deserialization failed ...
// use of closed network connection", reported as the store's fault. Through Read, the
// same closed body reads as a clean end (0, io.EOF), which is what io.Copy expects.
// Seen with smithy-go v1.28.8 and v1.28.9.
func sdkHTTPClient(c *http.Client) aws.HTTPClient { return bodyHidingClient{c} }

// bodyHidingClient is the http.Client with the request body's WriteTo hidden.
type bodyHidingClient struct{ c *http.Client }

// Do sends req with its body behind readOnlyBody. The SDK builds a new request for
// every attempt and closes req.Body afterwards, which reaches its own body through
// readOnlyBody.Close.
func (h bodyHidingClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = readOnlyBody{req.Body}
	}
	return h.c.Do(req)
}

// readOnlyBody exposes only Read and Close of a body, so io.Copy reads it.
type readOnlyBody struct{ rc io.ReadCloser }

func (b readOnlyBody) Read(p []byte) (int, error) { return b.rc.Read(p) }
func (b readOnlyBody) Close() error               { return b.rc.Close() }
