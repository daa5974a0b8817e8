package engine

import (
	"math"
	"runtime"
	"sync/atomic"
)

// insertKeys hands out the keys inserts add beyond the keyspace, each once.
//
// Several nodes inserting into one keyspace (a fleet) split the new keys among them:
// member i of n takes base+i, base+i+n, base+i+2n, ... (workload.insertMember and
// insertMembers, which a fleet's coordinator sets from its sorted member list), so no two
// nodes insert the same key and the fleet's keyspace grows by the fleet's inserts. A
// stride rather than ranges keeps the fleet's new keys dense while its members insert at
// one pace (their rates are one split), so a latest pattern on any node finds its
// neighbours' keys too.
//
// When the split changes while inserts run (a node joined or left), the members have
// counted their inserts apart and may stand at different keys: a share each started from
// its own count would overlap another's. So the coordinator gives every member one base
// (workload.insertBase) beyond every key any member claimed, and a member of the old
// split first inserts what is left of its old stride below that base, then its new share
// from it: the old strides, cut at the base, and the new ones, from it, are disjoint, and
// the keys below the base are all inserted but those of a member that left.
type insertKeys struct {
	cur atomic.Pointer[insertShare]
	// claimed counts the keys handed out, over every share.
	claimed atomic.Int64
	// planned is the last plan's base, member and members: a plan that repeats them (a
	// configuration change of something else) keeps the share.
	planned [3]int64
}

// insertShare is one assignment of new keys: the keys base+member+k*members for k =
// 0, 1, ... below end, then those of next. The count of keys claimed, claimed, gets
// sealedShare added when the share is replaced: a claim that then reads it as at least
// sealedShare takes its key from the next share instead, so no key of an old share is
// handed out once the next share's base was worked out from its count.
type insertShare struct {
	base, member, members int64
	// end bounds the share's keys (exclusive); math.MaxInt64 for an open share, which
	// has no next.
	end     int64
	next    *insertShare
	claimed atomic.Int64
}

// sealedShare marks a replaced share's claimed count; the counts stay far below it.
const sealedShare = 1 << 62

// claim returns the index of a new key, never returned before.
func (k *insertKeys) claim() int64 {
	for {
		s := k.cur.Load()
		n := s.claimed.Add(1) - 1
		if n >= sealedShare {
			// plan is replacing s: its next share is stored at once.
			runtime.Gosched()
			continue
		}
		if key := s.base + s.member + n*s.members; key < s.end {
			k.claimed.Add(1)
			return key
		}
		// s is used up below its end: its next share takes over (or a plan did already).
		k.cur.CompareAndSwap(s, s.next)
	}
}

// size returns the keyspace's size as this node sees it: every key below base +
// claimed×members is the initial keyspace's or claimed, by this node or (when it
// inserts one share of n) by a member at its pace.
func (k *insertKeys) size() int64 {
	for {
		s := k.cur.Load()
		if s == nil {
			return 0
		}
		if n := s.claimed.Load(); n < sealedShare {
			return min(s.base+n*s.members, s.end)
		}
		runtime.Gosched()
	}
}

// inserted returns how many keys this node's inserts claimed.
func (k *insertKeys) inserted() int64 { return k.claimed.Load() }

// plan makes the keys inserts claim from now on start at numKeys at the least, and be
// member's share of members; the keys claimed so far stay claimed. With base above 0 (a
// fleet's re-split) the new share starts at base and what is left below base of a share
// that split keys among several members comes first; with base 0 the share starts where
// this node's inserts stopped. Calls are serialised by the engine's mu.
func (k *insertKeys) plan(numKeys, base, member, members int64) {
	s := k.cur.Load()
	if s == nil {
		k.cur.Store(&insertShare{base: max(base, numKeys), member: member, members: members, end: math.MaxInt64})
		k.planned = [3]int64{base, member, members}
		return
	}
	if k.planned == [3]int64{base, member, members} && k.size() >= numKeys {
		return
	}
	k.planned = [3]int64{base, member, members}
	for {
		s = k.cur.Load()
		n := s.claimed.Add(sealedShare) - sealedShare
		var next *insertShare
		if base > 0 {
			open := &insertShare{base: max(base, numKeys), member: member, members: members, end: math.MaxInt64}
			next = open
			if s.members > 1 {
				// Only a split among several members was the coordinator's previous one, which
				// every member of it was given with one base: a node's own single share would
				// have every key below base in it.
				next = rest(s, n, open.base, open)
			}
		} else {
			// Every key of s is below base + claimed×members, so the next share starts there.
			next = &insertShare{base: max(min(s.base+n*s.members, s.end), numKeys), member: member, members: members, end: math.MaxInt64}
		}
		if k.cur.CompareAndSwap(s, next) {
			return
		}
		// A claim moved from s, used up, to its next share: plan from that one.
	}
}

// rest returns the shares of s from its claimed-th key on, cut at limit, followed by
// tail: the keys of the chain s that are still to be claimed and lie below limit.
func rest(s *insertShare, claimed, limit int64, tail *insertShare) *insertShare {
	if s == nil {
		return tail
	}
	r := &insertShare{base: s.base + claimed*s.members, member: s.member, members: s.members, end: min(s.end, limit)}
	after := tail
	if s.end < limit {
		after = rest(s.next, 0, limit, tail)
	}
	if r.base+r.member >= r.end {
		return after // nothing of s left below its end
	}
	r.next = after
	return r
}
