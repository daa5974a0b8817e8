package stats

import (
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ndbench/ndbench/driver"
)

// Limits of the error messages kept so that failures explain themselves.
const (
	// MaxErrorMessages is how many distinct messages are kept per op class and failure
	// class: when a new one arrives the one seen least recently is dropped.
	MaxErrorMessages = 10
	// MaxErrorMessageBytes is where a message is cut: drivers wrap errors with context,
	// and the head says what failed.
	MaxErrorMessageBytes = 200
)

// ErrorMessage is one distinct failure message of an op class and what is known about it.
type ErrorMessage struct {
	// Class is the failure class (driver.Class name) the message was counted under.
	Class string `json:"class"`
	// Message is the error's text, credentials masked (driver.Shown), cut at
	// MaxErrorMessageBytes. Messages that differ only in their digits are kept as one,
	// each run of digits that differed shown as "N".
	Message string `json:"message"`
	// Count is how many failures had this message since the span started (a message
	// dropped to make room and seen again starts counting again).
	Count int64 `json:"count"`
	// First and Last are when it was first and last seen.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// errEntry is one kept message of a shard: key is the raw (unmasked) cut text it is
// matched by, shown the text users see.
type errEntry struct {
	key, shown  string
	count       int64
	first, last int64  // unix nanoseconds
	varies      uint64 // runs of digits shown as N: messages differing in them were merged
}

// errTable is a shard's messages for one failure class. It lives beside the interval
// buffers (it is cumulative, not per interval) and is guarded by the shard's lock, which
// a failure takes anyway to count itself: no lock of its own, nothing shared between
// shards, and nothing at all on the success path.
type errTable struct {
	entries []errEntry
	hit     int // index of the last match: a failing store usually repeats itself
}

// cut returns the head of msg at most MaxErrorMessageBytes long, on a rune boundary.
func cut(msg string) string {
	if len(msg) <= MaxErrorMessageBytes {
		return msg
	}
	i := MaxErrorMessageBytes
	for i > 0 && !utf8.RuneStart(msg[i]) {
		i--
	}
	return msg[:i]
}

// digitRuns compares a and b treating every run of digits as equal to every other run.
// When they are equal so, it returns which runs (by index; runs past 63 share bit 63)
// hold different digits. It does not allocate.
func digitRuns(a, b string) (differ uint64, same bool) {
	i, j, run := 0, 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			if a[si:i] != b[sj:j] {
				differ |= 1 << min(run, 63)
			}
			run++
			continue
		}
		if a[i] != b[j] {
			return 0, false
		}
		i++
		j++
	}
	return differ, i == len(a) && j == len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// collapseRuns replaces the runs of digits whose bit is set in runs (see digitRuns) with
// "N", keeping the others: a limit or a port that every message shares stays readable.
func collapseRuns(s string, runs uint64) string {
	var b strings.Builder
	b.Grow(len(s))
	run := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			b.WriteByte(s[i])
			continue
		}
		j := i
		for j+1 < len(s) && isDigit(s[j+1]) {
			j++
		}
		if runs&(1<<min(run, 63)) != 0 {
			b.WriteByte('N')
		} else {
			b.WriteString(s[i : j+1])
		}
		run++
		i = j
	}
	return b.String()
}

// add counts one failure with message msg at now (unix nanoseconds). Only a message not
// seen before allocates (masking and copying it).
func (t *errTable) add(msg string, now int64) {
	key := cut(msg)
	if t.hit < len(t.entries) && t.entries[t.hit].key == key {
		t.bump(t.hit, now)
		return
	}
	for i := range t.entries {
		if t.entries[i].key == key {
			t.bump(i, now)
			return
		}
	}
	// Numbers that vary per operation (a key, an offset, a request id) would otherwise
	// make every failure a new message and push the informative ones out.
	for i := range t.entries {
		e := &t.entries[i]
		if differ, same := digitRuns(e.key, key); same {
			if differ&^e.varies != 0 {
				e.varies |= differ
				// From the whole message, masked before the cut as below (the runs past the
				// cut keep their digits, and are cut away).
				e.shown = strings.Clone(cut(driver.Shown(false, collapseRuns(msg, e.varies))))
			}
			t.bump(i, now)
			return
		}
	}
	// Mask before cutting, so a cut cannot leave half a credential unrecognised.
	e := errEntry{key: strings.Clone(key), shown: cut(driver.Shown(false, msg)), count: 1, first: now, last: now}
	e.shown = strings.Clone(e.shown)
	if len(t.entries) < MaxErrorMessages {
		t.entries = append(t.entries, e)
		t.hit = len(t.entries) - 1
		return
	}
	oldest := 0
	for i := range t.entries {
		if t.entries[i].last < t.entries[oldest].last {
			oldest = i
		}
	}
	t.entries[oldest] = e
	t.hit = oldest
}

func (t *errTable) bump(i int, now int64) {
	e := &t.entries[i]
	e.count++
	e.last = max(e.last, now)
	t.hit = i
}

// FailureErr counts a failed op of class c, as Failure does, and keeps err's message
// (see ErrorMessage). A nil err is a Failure.
func (s *Shard) FailureErr(c driver.Class, err error) {
	if err == nil {
		s.Failure(c)
		return
	}
	if int(c) >= driver.NumClasses {
		c = driver.ClassOther
	}
	msg := err.Error()
	now := time.Now().UnixNano()
	s.mu.Lock()
	s.buf().Failures[c]++
	if s.errs == nil {
		s.errs = new([driver.NumClasses]errTable)
	}
	s.errs[c].add(msg, now)
	s.mu.Unlock()
}

// resetErrors forgets the kept messages.
func (s *Shard) resetErrors() {
	s.mu.Lock()
	s.errs = nil
	s.mu.Unlock()
}

// errorMessages merges the shards' kept messages, per class the MaxErrorMessages seen
// most recently, most recent first, classes in driver.Classes order.
func (r *Recorder) errorMessages() []ErrorMessage {
	var out []ErrorMessage
	for _, cl := range driver.Classes {
		merged := map[string]*errEntry{}
		for i := range r.shards {
			s := &r.shards[i]
			s.mu.Lock()
			if s.errs == nil {
				s.mu.Unlock()
				continue
			}
			for _, e := range s.errs[cl].entries {
				if m, ok := merged[e.shown]; ok {
					m.count += e.count
					m.first = min(m.first, e.first)
					m.last = max(m.last, e.last)
				} else {
					e := e
					merged[e.shown] = &e
				}
			}
			s.mu.Unlock()
		}
		list := make([]ErrorMessage, 0, len(merged))
		for _, e := range merged {
			list = append(list, ErrorMessage{Class: cl.String(), Message: e.shown, Count: e.count,
				First: time.Unix(0, e.first), Last: time.Unix(0, e.last)})
		}
		sort.Slice(list, func(i, j int) bool {
			if !list[i].Last.Equal(list[j].Last) {
				return list[i].Last.After(list[j].Last)
			}
			return list[i].Message < list[j].Message
		})
		if len(list) > MaxErrorMessages {
			list = list[:MaxErrorMessages]
		}
		out = append(out, list...)
	}
	return out
}

// Errors returns, per series (keyed by name) that failed since the cumulative
// span started, the distinct failure messages kept (see ErrorMessage): per failure class
// at most MaxErrorMessages, the most recently seen first. Op classes without failures
// are absent; the map is never nil.
func (c *Collector) Errors() map[string][]ErrorMessage {
	out := map[string][]ErrorMessage{}
	for _, s := range c.list() {
		if m := s.rec.errorMessages(); len(m) > 0 {
			out[s.name] = m
		}
	}
	return out
}
