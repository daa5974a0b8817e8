package source

import (
	"sync"
	"time"

	"github.com/ndbench/ndbench/internal/config"
)

// Status is what a dynamic configuration source (a watched file, etcd) last did, for a
// status page: when its content was last applied and the last error, so an operator can
// tell that an edit was rejected and why. An error is kept after a later success (its time
// says when); Failing says whether the source's current content is not what is applied.
type Status struct {
	Source    string    `json:"source"`             // "file config.yaml", "etcd 127.0.0.1:2379 /ndbench/node1/"
	Version   uint64    `json:"version,omitempty"`  // store version that last applied this source's content
	Revision  int64     `json:"revision,omitempty"` // etcd revision of that content; 0 for a file
	AppliedAt time.Time `json:"appliedAt,omitzero"` // zero until the first applied change
	CheckedAt time.Time `json:"checkedAt,omitzero"` // last time the content was read, applied or not
	Error     string    `json:"error,omitempty"`    // the last error, kept after later successes
	ErrorAt   time.Time `json:"errorAt,omitzero"`
	Failing   bool      `json:"failing"` // the last attempt failed: the last good content stays applied
	// FailingSince is when the source began failing, zero while it is not: an error
	// that changes its message while the source stays down keeps it.
	FailingSince time.Time `json:"failingSince,omitzero"`
}

// sourceState records a source's status for concurrent readers and reports errors once
// each: a source retries the same bad content on unrelated events, and its user should
// hear about a mistake once, not on every retry.
type sourceState struct {
	onError func(error)

	mu      sync.Mutex
	st      Status
	lastMsg string // message of the error currently reported, "" when healthy
}

func newSourceState(source string, onError func(error)) *sourceState {
	return &sourceState{onError: onError, st: Status{Source: source}}
}

func (s *sourceState) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// applied records that the source's current content is in effect: by snap when it was
// applied now, or nil when the store already held it.
func (s *sourceState) applied(snap *config.Snapshot, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.st.CheckedAt = now
	if snap != nil {
		s.st.Version = snap.Version
		s.st.AppliedAt = now
	}
	s.st.Revision = rev
	s.st.Failing, s.st.FailingSince = false, time.Time{}
	s.lastMsg = ""
}

// failed records err and reports it unless it repeats the error already reported.
func (s *sourceState) failed(err error) {
	s.mu.Lock()
	now := time.Now()
	s.st.CheckedAt = now
	repeat := err.Error() == s.lastMsg
	if !repeat {
		s.lastMsg = err.Error()
		s.st.Error = err.Error()
		s.st.ErrorAt = now
	}
	if !s.st.Failing {
		s.st.FailingSince = now
	}
	s.st.Failing = true
	s.mu.Unlock()
	if !repeat && s.onError != nil {
		s.onError(err)
	}
}
