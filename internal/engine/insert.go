package engine

import (
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
type insertKeys struct {
	cur atomic.Pointer[insertShare]
}

// insertShare is one assignment of new keys: the keys base+member+k*members for k =
// 0, 1, ... The count of keys claimed, claimed, gets sealedShare added when the share
// is replaced: a claim that then reads it as at least sealedShare takes its key from the
// next share instead, so no key of an old share is handed out once the next share's base
// was worked out from its count.
type insertShare struct {
	base, member, members int64
	claimed               atomic.Int64
}

// sealedShare marks a replaced share's claimed count; the counts stay far below it.
const sealedShare = 1 << 62

// claim returns the index of a new key, never returned before.
func (k *insertKeys) claim() int64 {
	for {
		s := k.cur.Load()
		if n := s.claimed.Add(1) - 1; n < sealedShare {
			return s.base + s.member + n*s.members
		}
		// plan is replacing s: its next share is stored at once.
		runtime.Gosched()
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
			return s.base + n*s.members
		}
		runtime.Gosched()
	}
}

// plan makes the keys inserts claim from now on start at numKeys at the least, and be
// member's share of members; the keys claimed so far stay claimed. Calls are serialised
// by the engine's mu.
func (k *insertKeys) plan(numKeys, member, members int64) {
	s := k.cur.Load()
	if s == nil {
		k.cur.Store(&insertShare{base: numKeys, member: member, members: members})
		return
	}
	if s.member == member && s.members == members && s.base+s.claimed.Load()*s.members >= numKeys {
		return
	}
	// Every key of s is below base + claimed×members, so the next share starts there.
	n := s.claimed.Add(sealedShare) - sealedShare
	k.cur.Store(&insertShare{base: max(s.base+n*s.members, numKeys), member: member, members: members})
}
