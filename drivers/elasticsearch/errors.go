package elasticsearch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// serverError is an error answer of the server: {"error":{"type":...,"reason":...},
// "status":N}, or one document's error in a _bulk answer.
type serverError struct {
	Status int    `json:"status"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// Error shows the status, the type and the reason, as the server gave them.
func (e *serverError) Error() string {
	switch {
	case e.Type == "" && e.Reason == "":
		return fmt.Sprintf("server answered %d %s", e.Status, http.StatusText(e.Status))
	case e.Reason == "":
		return fmt.Sprintf("server answered %d: %s", e.Status, e.Type)
	}
	return fmt.Sprintf("server answered %d: %s: %s", e.Status, e.Type, e.Reason)
}

// parseServerError reads an error answer; a body that is not the usual JSON (a proxy's
// page) keeps its first bytes as the reason.
func parseServerError(status int, body []byte) *serverError {
	var r struct {
		Error json.RawMessage `json:"error"`
	}
	se := &serverError{Status: status}
	if json.Unmarshal(body, &r) == nil && len(r.Error) > 0 {
		if json.Unmarshal(r.Error, se) != nil {
			// Old servers and some 404s give the error as a string.
			var s string
			_ = json.Unmarshal(r.Error, &s)
			se.Reason = s
		}
		se.Status = status
		return se
	}
	if status == http.StatusNotFound {
		return se // GET of a missing document: {"found":false,...}
	}
	reason := strings.TrimSpace(string(body))
	if len(reason) > 200 {
		reason = reason[:200] + "..."
	}
	se.Reason = reason
	return se
}

// classify maps an error answer onto a failure class:
//
//	429, *_rejected_execution_exception, circuit_breaking_exception   throttled
//	5xx (but 504)                                                     unavailable
//	504, timeout exceptions                                           timeout
//	other 4xx (mapping and parsing errors, bad requests, auth)        rejected
func classify(e *serverError) driver.Class {
	switch {
	case e.Status == http.StatusTooManyRequests,
		strings.HasSuffix(e.Type, "rejected_execution_exception"),
		e.Type == "circuit_breaking_exception":
		return driver.ClassThrottled
	case e.Status == http.StatusGatewayTimeout, strings.Contains(e.Type, "timeout_exception"):
		return driver.ClassTimeout
	case e.Status >= 500:
		return driver.ClassUnavailable
	case e.Status >= 400:
		return driver.ClassRejected
	}
	return driver.ClassOther
}
