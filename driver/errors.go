package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// Class is the kind of a failed operation. Stats count failures by class, so an outage
// (unavailable), an overload (timeout, throttled) and a bad request (rejected) look
// different in every report.
type Class uint8

// The failure classes. ClassOther is the zero value so an unclassified error is never
// mistaken for a specific cause.
const (
	ClassOther Class = iota
	ClassTimeout
	ClassUnavailable
	ClassThrottled
	ClassRejected
	numClasses
)

// NumClasses is the number of failure classes; Class values are in [0, NumClasses).
const NumClasses = int(numClasses)

// Classes lists every failure class in a stable order.
var Classes = [NumClasses]Class{ClassOther, ClassTimeout, ClassUnavailable, ClassThrottled, ClassRejected}

var classNames = [NumClasses]string{"other", "timeout", "unavailable", "throttled", "rejected"}

// String returns the class name used in reports and the API.
func (c Class) String() string {
	if int(c) < NumClasses {
		return classNames[c]
	}
	return "unknown"
}

// Error is a classified store error. Drivers wrap their client's errors in it when the
// generic rules of Classify cannot tell the cause (a throttling response, a rejected
// request, a store-specific timeout).
type Error struct {
	Class Class
	Err   error
}

// Error returns the wrapped message prefixed by the class.
func (e *Error) Error() string {
	if e.Err == nil {
		return e.Class.String()
	}
	return e.Class.String() + ": " + e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Wrap classifies err as class. It returns nil for a nil err.
func Wrap(class Class, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: class, Err: err}
}

// Classify returns the class of err: the class of the first *Error in its chain, or else a
// class inferred from standard errors (deadlines and net timeouts are timeouts; refused,
// reset and closed connections are unavailable). Drivers need to wrap only what these rules
// cannot see.
func Classify(err error) Class {
	var de *Error
	if errors.As(err, &de) {
		return de.Class
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return ClassTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ClassTimeout
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return ClassUnavailable
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return ClassUnavailable
	}
	return ClassOther
}

// BulkError is what BulkWriter.WriteBulk returns when the store wrote some keys of the
// batch and refused others (Elasticsearch's _bulk answers per document). Errs has one
// entry per key, in the order of the keys: nil for a key written, its own error for a
// key that failed. The engine then counts each key by its own outcome, and retries only
// the keys that failed, instead of counting the whole batch as failed.
type BulkError struct {
	Errs []error
}

// Error says how many keys failed and shows the first failure.
func (e *BulkError) Error() string {
	n, first := 0, error(nil)
	for _, err := range e.Errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	if first == nil {
		return fmt.Sprintf("bulk write: 0 of %d keys failed", len(e.Errs))
	}
	return fmt.Sprintf("bulk write: %d of %d keys failed, first: %v", n, len(e.Errs), first)
}

// Unwrap returns the keys' errors, so Classify of a BulkError is the class of its first
// failed key.
func (e *BulkError) Unwrap() []error {
	out := make([]error, 0, len(e.Errs))
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}
