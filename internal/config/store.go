package config

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
)

// MaxChangeKeys bounds the keys of one change: a patch (API PATCH /api/v1/config, NDBench
// config/set, driver init options), a layer a source sets (a config file, etcd's keys
// under the prefix, --set, the environment). A change is validated whole under the
// store's lock; this keeps one request from holding it long. A configuration with every
// option of every driver is a few hundred keys.
const MaxChangeKeys = 1000

// ErrTooManyKeys is wrapped by the error for a change over MaxChangeKeys keys.
var ErrTooManyKeys = errors.New("too many keys in one configuration change")

// checkSize refuses a change of n keys from source when it is over MaxChangeKeys.
func checkSize(source string, n int) error {
	if n > MaxChangeKeys {
		return fmt.Errorf("%w: %d keys from %s; the limit is %d keys per change: split it into smaller changes",
			ErrTooManyKeys, n, source, MaxChangeKeys)
	}
	return nil
}

// Subscriber is told about every applied change: the snapshots before and after, and the
// effective keys whose value changed (sorted; defaults included).
type Subscriber func(old, new *Snapshot, changed []string)

// Store holds the current snapshot for live changes. Readers call Current, which never
// blocks; changes replace or patch one layer, rebuild and validate the whole configuration,
// and only then swap it in.
type Store struct {
	cur atomic.Pointer[Snapshot]

	// mu serialises changes and their notifications, so subscribers see versions in order.
	mu sync.Mutex
	// allow is what changes from OriginAPI may reach beyond the store (SetAllow); guarded
	// by mu.
	allow Allow

	subMu  sync.Mutex
	subs   map[uint64]Subscriber
	reqs   map[uint64]Requirement
	nextID uint64
}

// Requirement is a rule a new snapshot must pass, besides Build's validation, before a
// Store accepts it: for rules that depend on state outside the configuration, such as the
// driver a node has connected. It returns driver.FieldErrors naming keys, or nil.
type Requirement func(next *Snapshot) error

// NewStore returns a store holding s, which should come from Load (its layers are what
// later changes are applied on).
func NewStore(s *Snapshot) *Store {
	st := &Store{subs: map[uint64]Subscriber{}, reqs: map[uint64]Requirement{}}
	if s == nil {
		s = &Snapshot{}
	}
	st.cur.Store(s)
	return st
}

// Current returns the current snapshot. It is shared: do not modify it.
func (s *Store) Current() *Snapshot { return s.cur.Load() }

// Update replaces the values of one layer (LayerRuntime for API and UI changes, LayerEtcd,
// ...) and applies the result. An invalid result changes nothing and returns
// driver.FieldErrors naming every bad key.
func (s *Store) Update(layer string, values map[string]string) (*Snapshot, error) {
	return s.apply(layer, values, false)
}

// Patch merges values into one layer, keeping its other values, and applies the result
// like Update.
func (s *Store) Patch(layer string, values map[string]string) (*Snapshot, error) {
	return s.apply(layer, values, true)
}

// Subscribe registers fn for every applied change that alters at least one value. fn runs
// on the goroutine that made the change, after the swap; it must not call Update or Patch
// (that would deadlock) and should return quickly. cancel stops further calls.
func (s *Store) Subscribe(fn Subscriber) (cancel func()) {
	s.subMu.Lock()
	id := s.nextID
	s.nextID++
	s.subs[id] = fn
	s.subMu.Unlock()
	return func() {
		s.subMu.Lock()
		delete(s.subs, id)
		s.subMu.Unlock()
	}
}

// Require registers fn, which every later change must pass to be accepted (Update, Patch,
// SetLayer, Check). fn runs under the store's change lock, like subscribers: it must not
// call Update or Patch and should return quickly. cancel removes it.
func (s *Store) Require(fn Requirement) (cancel func()) {
	s.subMu.Lock()
	id := s.nextID
	s.nextID++
	s.reqs[id] = fn
	s.subMu.Unlock()
	return func() {
		s.subMu.Lock()
		delete(s.reqs, id)
		s.subMu.Unlock()
	}
}

// check runs the requirements on next. The caller holds s.mu.
func (s *Store) check(next *Snapshot) error {
	s.subMu.Lock()
	ids := make([]uint64, 0, len(s.reqs))
	for id := range s.reqs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	reqs := make([]Requirement, len(ids))
	for i, id := range ids {
		reqs[i] = s.reqs[id]
	}
	s.subMu.Unlock()
	for _, fn := range reqs {
		if err := fn(next); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(name string, values map[string]string, merge bool) (*Snapshot, error) {
	return s.applyFrom(name, "", values, merge)
}

// PatchFrom is Patch with every patched key labelled origin (e.g. "api") in Entries and
// errors, whatever the layer's own label, so a value set from the API or the UI does not
// show as set on the command line. A change from OriginAPI is untrusted: what it sets
// beyond the store must pass the store's Allow (SetAllow), or it returns a
// *NotAllowedError and applies nothing.
func (s *Store) PatchFrom(layer, origin string, values map[string]string) (*Snapshot, error) {
	return s.applyFrom(layer, origin, values, true)
}

func (s *Store) applyFrom(name, origin string, values map[string]string, merge bool) (*Snapshot, error) {
	if err := checkSize(sourceName(name, origin), len(values)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	next, err := old.with(name, origin, values, merge)
	if err == nil && origin == OriginAPI {
		err = s.gate(old, next)
	}
	if err == nil {
		err = s.check(next)
	}
	if err != nil {
		return nil, err
	}
	return s.publish(old, next), nil
}

// SetLayer replaces one whole layer, its Source and per-key Origins included, and applies
// the result like Update. Sources that label each key (an etcd key, a re-read config file)
// use it so that entries and errors name where a value came from; a layer not yet in the
// store is added at the precedence its name gives.
func (s *Store) SetLayer(l Layer) (*Snapshot, error) {
	if err := checkSize(sourceName(l.Name, l.Source), len(l.Values)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	layers := make([]Layer, 0, len(old.layers)+1)
	found := false
	for _, ol := range old.layers {
		if ol.Name == l.Name {
			found = true
			layers = append(layers, l.clone())
			continue
		}
		layers = append(layers, ol.clone())
	}
	if len(old.layers) == 0 {
		layers = append(layers, DefaultsLayer())
	}
	if !found {
		layers = append(layers, l.clone())
	}
	next, err := Build(layers)
	if err == nil {
		err = s.check(next)
	}
	if err != nil {
		return nil, err
	}
	return s.publish(old, next), nil
}

// sourceName names where a change came from, for the size error.
func sourceName(layer, label string) string {
	if label != "" {
		return label
	}
	return layer
}

// publish swaps next in as the version after old and tells the subscribers what changed.
// The caller holds s.mu, so versions and notifications stay in order.
func (s *Store) publish(old, next *Snapshot) *Snapshot {
	next.Version = old.Version + 1
	changed := diff(old.values, next.values)
	s.cur.Store(next)

	if len(changed) > 0 {
		s.subMu.Lock()
		subs := make([]Subscriber, 0, len(s.subs))
		ids := make([]uint64, 0, len(s.subs))
		for id := range s.subs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			subs = append(subs, s.subs[id])
		}
		s.subMu.Unlock()
		for _, fn := range subs {
			fn(old, next, changed)
		}
	}
	return next
}

// Check validates what Patch(layer, values) would produce, without applying it: for a caller
// that must know a change is valid before acting on it (connecting a driver, say).
func (s *Store) Check(layer string, values map[string]string) error {
	_, err := s.Preview(layer, values)
	return err
}

// Preview returns the snapshot that patching layer with values would give, checked as
// Check does, without applying it: what a change will be made of (a composition's
// children given with a driver init) before it is committed.
func (s *Store) Preview(layer string, values map[string]string) (*Snapshot, error) {
	return s.PreviewFrom(layer, "", values)
}

// PreviewFrom is Preview of PatchFrom(layer, origin, values): checked the same way, the
// Allow of an untrusted origin included.
func (s *Store) PreviewFrom(layer, origin string, values map[string]string) (*Snapshot, error) {
	if err := checkSize(sourceName(layer, origin), len(values)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	next, err := old.with(layer, origin, values, true)
	if err != nil {
		return nil, err
	}
	if origin == OriginAPI {
		if err := s.gate(old, next); err != nil {
			return nil, err
		}
	}
	if err := s.check(next); err != nil {
		return nil, err
	}
	return next, nil
}

// with builds the snapshot that results from replacing (or, with merge, patching) the
// values of one layer of s.
func (s *Snapshot) with(name, origin string, values map[string]string, merge bool) (*Snapshot, error) {
	layers := make([]Layer, 0, len(s.layers)+1)
	found := false
	for _, l := range s.layers {
		l = l.clone()
		if l.Name == name {
			found = true
			prev := l.clone()
			l = withOrigin(withValues(l, values, merge), origin, values)
			if merge {
				keepOrigins(&l, prev, values)
			}
		}
		layers = append(layers, l)
	}
	if len(s.layers) == 0 {
		layers = append(layers, DefaultsLayer())
	}
	if !found {
		l := Layer{Name: name, Source: name}
		if name == LayerRuntime {
			l.Source = "--set"
		}
		layers = append(layers, withOrigin(withValues(l, values, false), origin, values))
	}
	return Build(layers)
}

// keepOrigins restores, in l, the label prev had for each key of values that the change
// set to the value prev already held: such a key did not change, so it keeps naming where
// its value came from (a UI's connect re-sends the driver.name --driver gave).
func keepOrigins(l *Layer, prev Layer, values map[string]string) {
	for k, v := range values {
		old, ok := prev.Values[k]
		if !ok || old != v {
			continue
		}
		if o, labelled := prev.Origins[k]; labelled {
			if l.Origins == nil {
				l.Origins = map[string]string{}
			}
			l.Origins[k] = o
		} else {
			delete(l.Origins, k)
		}
	}
}

// withOrigin labels the given keys of l with origin (nothing when origin is empty).
func withOrigin(l Layer, origin string, values map[string]string) Layer {
	if origin == "" {
		return l
	}
	if l.Origins == nil {
		l.Origins = map[string]string{}
	}
	for k := range values {
		l.Origins[k] = origin
	}
	return l
}

// withValues returns l with its values replaced by (or, with merge, merged with) values.
// Per-key origins survive only for keys the change did not touch. A key replaces the
// layer's keys that the loader maps onto the same canonical key (a patch of
// workload.numReaders replaces an earlier workload.readers). Each key is canonicalized
// once and looked up in an index, so a change costs time linear in the keys involved
// (comparing every pair made a 30,000-key change hold the store's lock for minutes).
func withValues(l Layer, values map[string]string, merge bool) Layer {
	if !merge {
		l.Values = map[string]string{}
		l.Origins = nil
	}
	if l.Values == nil {
		l.Values = map[string]string{}
	}
	byCanon := make(map[string][]string, len(l.Values)+len(values))
	for k := range l.Values {
		c := canonicalKey(k)
		byCanon[c] = append(byCanon[c], k)
	}
	// Sorted, so that two spellings of one key in the same change resolve the same way
	// every time: the last in sort order wins, as when the loader reads a layer.
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := canonicalKey(k)
		for _, old := range byCanon[c] {
			if old != k {
				delete(l.Values, old)
				delete(l.Origins, old)
			}
		}
		byCanon[c] = []string{k}
		l.Values[k] = values[k]
		delete(l.Origins, k)
	}
	return l
}

// CanonicalKey is the key the loader maps k onto ("readRateLimit" → "workload.readRate"),
// or k itself when it maps onto none: a fleet coordinator compares keys written in any of
// the accepted forms with it.
func CanonicalKey(k string) string { return canonicalKey(k) }

// canonicalKey is the key the loader maps k onto, or k itself when it maps onto none (an
// unknown key, an NDBench property without an equivalent), which then matches only
// itself.
func canonicalKey(k string) string {
	if c, _, _, fe := normalize(k, "", ""); fe == nil && c != "" {
		return c
	}
	return k
}

// diff returns the keys whose value differs between a and b, sorted.
func diff(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// SetLayerIfChanged applies l unless the store already holds exactly l, so a source that
// re-reads unchanged content (an unrelated file event, a re-read after an etcd compaction)
// neither bumps the version nor notifies anyone. It returns nil, nil when nothing was
// applied. Only the source that owns a layer writes it, so the check cannot go stale.
func (s *Store) SetLayerIfChanged(l Layer) (*Snapshot, error) {
	if cur, ok := s.Current().layer(l.Name); ok && sameLayer(cur, l) || !ok && len(l.Values) == 0 {
		return nil, nil
	}
	return s.SetLayer(l)
}

// layer returns the layer of s with the given name.
func (s *Snapshot) layer(name string) (Layer, bool) {
	for _, l := range s.layers {
		if l.Name == name {
			return l, true
		}
	}
	return Layer{}, false
}

func sameLayer(a, b Layer) bool {
	return a.Name == b.Name && a.Source == b.Source && maps.Equal(a.Values, b.Values) && maps.Equal(a.Origins, b.Origins)
}
