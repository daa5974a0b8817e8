package driver

import (
	"context"
	"fmt"
	"strings"
)

// Kind says what an operation does to the store, which decides what the engine hands it
// and how it counts the outcome.
type Kind uint8

// The operation kinds.
const (
	// KindRead operations get a key and return a value or ErrNotFound (counted as a miss,
	// not a failure), like Driver.Read: a point lookup, a range scan, a search.
	KindRead Kind = iota
	// KindWrite operations get a key and a generated value, like Driver.Write: an insert,
	// an update, an append.
	KindWrite
	// KindOther operations get a key only and return nothing the engine looks at: a
	// counter increment, an HTTP route that is neither read nor write.
	KindOther
	// KindDelete operations get a key only and remove it: afterwards the key is absent,
	// so data validation expects a miss and never counts one as lost. ErrNotFound (there
	// was nothing to delete) counts as a miss. A driver that implements Deleter offers
	// the built-in operation "delete" of this kind.
	KindDelete
	// KindRMW is the built-in operation "rmw" that every driver offers: the engine reads
	// the key with Driver.Read and writes a new value with Driver.Write, timed as one
	// operation and as its two parts. A driver cannot declare operations of this kind.
	KindRMW
	// KindScan is the built-in operation "scan" of drivers that implement Scanner: it gets
	// a start key and a length, and reads up to that many keys in key order from the
	// start key. Reading none is a miss.
	KindScan
	// KindInsert is the built-in operation "insert" that every driver offers: the engine
	// claims a key beyond the current keyspace (each once, shared by all workers, so the
	// keyspace grows) and writes it with Inserter.Insert when the driver has it, else
	// Driver.Write. A driver cannot declare operations of this kind.
	KindInsert
	numKinds
)

var kindNames = [numKinds]string{"read", "write", "other", "delete", "rmw", "scan", "insert"}

// String returns the kind's name: "read", "write", "other", "delete", "rmw", "scan" or
// "insert".
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// MarshalText writes the kind's name, so JSON and the API show "read", not 0.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name, so a client of the API can decode what it lists.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("operation kind %q: want one of %s", b, strings.Join(kindNames[:], ", "))
}

// The operations every driver offers through the base contract.
const (
	// OpRead is the name of Driver.Read as an operation.
	OpRead = "read"
	// OpWrite is the name of Driver.Write as an operation.
	OpWrite = "write"
	// OpDelete is the name of Deleter.Delete as an operation, offered by the drivers that
	// implement Deleter.
	OpDelete = "delete"
	// OpRMW is the name of the read-modify-write every driver offers: Driver.Read, then
	// Driver.Write of the same key.
	OpRMW = "rmw"
	// OpScan is the name of Scanner.Scan as an operation, offered by the drivers that
	// implement Scanner.
	OpScan = "scan"
	// OpInsert is the name of the insert every driver offers: Driver.Write of a key
	// beyond the current keyspace, which grows by one.
	OpInsert = "insert"
)

// Scanner is implemented by drivers whose store reads keys in order from a start key (an
// LSM tree's iterator, a sorted index, a clustering range, a token range): they offer the
// operation "scan", which reads a range the way YCSB's workload E does. The order is the
// store's: a driver states it by implementing ScanOrderer, and one that does not scans in
// byte order (ScanBytes).
type Scanner interface {
	// Scan reads up to n keys and their values in the driver's scan order (ScanOrderOf),
	// from start (inclusive; start need not exist), and returns how many it read. Reading
	// none returns ErrNotFound, which the engine counts as a miss. ctx carries the
	// operation's deadline, as for Read.
	Scan(ctx context.Context, start string, n int) (int, error)
}

// ScanOrder is the order in which a Scanner reads keys from its start key.
type ScanOrder uint8

// The scan orders.
const (
	// ScanBytes: ascending byte order of the keys (an LSM tree, a B-tree index on the key,
	// a lexicographically sorted set): the keys read are start (if present) and those that
	// follow it by name.
	ScanBytes ScanOrder = iota
	// ScanStore: an order the store defines that is not the keys' (Cassandra's token
	// order under a hashing partitioner, DynamoDB's hash order): the keys read are n
	// neighbours of start in that order, a range read's cost, but not the keys that follow
	// start by name, and whether start itself is read is the store's (DynamoDB's
	// ExclusiveStartKey skips it). How many a scan reads from a given start depends on
	// where the keys fall in that order.
	ScanStore
)

// String returns "bytes" or "store".
func (o ScanOrder) String() string {
	if o == ScanStore {
		return "store"
	}
	return "bytes"
}

// ScanOrderer is implemented by Scanners that state their scan order; a Scanner that
// does not scans in byte order.
type ScanOrderer interface {
	// ScanOrder returns the order Scan reads keys in. It may depend on the connected
	// store (a partitioner) and does not change after Init.
	ScanOrder() ScanOrder
}

// ScanOrderOf returns the scan order of s: what it states (ScanOrderer), else ScanBytes.
func ScanOrderOf(s Scanner) ScanOrder {
	if o, ok := s.(ScanOrderer); ok {
		return o.ScanOrder()
	}
	return ScanBytes
}

// Inserter is implemented by drivers whose store has an insert distinct from the upsert
// Write does (SQL's INSERT beside INSERT ... ON CONFLICT DO UPDATE): the built-in
// operation insert calls Insert instead of Write. Inserting a key that exists fails
// (class rejected): the engine inserts each key it claims once, so a failure says the
// store already held the key (a previous run's inserts, another writer).
type Inserter interface {
	// Insert stores value under key, which must not exist. ctx carries the operation's
	// deadline, as for Write; the driver must not keep value.
	Insert(ctx context.Context, key string, value []byte) error
}

// Indexes of the built-in operations, as Definition.Operation returns them; a declared
// operation's index is its position in Definition.Operations.
const (
	IndexRead   = PipelineRead  // Driver.Read
	IndexWrite  = PipelineWrite // Driver.Write
	IndexDelete = -3            // Deleter.Delete
	IndexRMW    = -4            // Driver.Read, then Driver.Write
	IndexScan   = -5            // Scanner.Scan
	IndexInsert = -6            // Driver.Write of a key beyond the keyspace
)

// Operation declares one operation a driver offers beyond Read and Write (which every
// driver has, as operations "read" and "write"). Op classes of the workload pick among a
// driver's operations by weight (workload.ops.<class>.mix), and every output reports each
// operation by its name.
type Operation struct {
	// Name is how workloads and outputs refer to the operation: a letter, then letters and
	// digits (it becomes part of series names like "search.byTitle").
	Name string `json:"name"`
	// Kind is what the operation does (see Kind).
	Kind Kind `json:"kind"`
	// Help is one line for `ndbench drivers` and the API.
	Help string `json:"help"`
}

// Operator is implemented by drivers whose Definition declares Operations.
type Operator interface {
	// Do runs operation op, the index of the operation in Definition.Operations, on key.
	// value is the generated value for KindWrite operations and nil otherwise; the driver
	// must not keep it. For KindRead operations the returned value is the one read (nil is
	// fine when there is nothing to return, e.g. a count) and ErrNotFound is a miss; for
	// the other kinds it is ignored. ctx carries the operation's deadline, as for Read.
	Do(ctx context.Context, op int, key string, value []byte) ([]byte, error)
}

// The built-in operations as declarations.
var (
	readOp   = Operation{Name: OpRead, Kind: KindRead, Help: "read one key (Driver.Read)"}
	writeOp  = Operation{Name: OpWrite, Kind: KindWrite, Help: "write one key (Driver.Write)"}
	deleteOp = Operation{Name: OpDelete, Kind: KindDelete, Help: "delete one key (Deleter.Delete)"}
	rmwOp    = Operation{Name: OpRMW, Kind: KindRMW, Help: "read one key, then write it (Driver.Read, then Driver.Write), timed as one operation and as its two parts"}
	scanOp   = Operation{Name: OpScan, Kind: KindScan, Help: "read up to n keys in the driver's scan order from a start key (Scanner.Scan); n uniform in 1..100"}
	insertOp = Operation{Name: OpInsert, Kind: KindInsert, Help: "write a new key beyond the current keyspace (Inserter.Insert, else Driver.Write), which grows by one; latest reads follow it"}
)

// AllOperations returns every operation def's drivers offer: read, write, its declared
// Operations in order, then the built-in operations its driver offers beyond Read and
// Write that it does not declare itself: delete (when the driver implements Deleter),
// scan (when it implements Scanner), rmw and insert.
func (def Definition) AllOperations() []Operation {
	ops := append([]Operation{readOp, writeOp}, def.Operations...)
	for _, b := range def.builtins() {
		ops = append(ops, b.op)
	}
	return ops
}

// OperationNames returns the names of AllOperations.
func (def Definition) OperationNames() []string {
	var names []string
	for _, o := range def.AllOperations() {
		names = append(names, o.Name)
	}
	return names
}

// Operation returns the operation named name and its index: the position of a declared
// operation for Operator.Do, or one of the negative Index constants for a built-in one.
func (def Definition) Operation(name string) (Operation, int, bool) {
	switch name {
	case OpRead:
		return readOp, IndexRead, true
	case OpWrite:
		return writeOp, IndexWrite, true
	}
	for i, o := range def.Operations {
		if o.Name == name {
			return o, i, true
		}
	}
	for _, b := range def.builtins() {
		if b.op.Name == name {
			return b.op, b.index, true
		}
	}
	return Operation{}, 0, false
}

type builtin struct {
	op    Operation
	index int
}

// builtins returns the built-in operations beyond Read and Write that def's driver
// offers and does not declare under the same name (a declared one takes precedence: an
// http driver's route named delete is the route).
func (def Definition) builtins() []builtin {
	var out []builtin
	declared := func(name string) bool {
		for _, o := range def.Operations {
			if o.Name == name {
				return true
			}
		}
		return false
	}
	if def.New != nil {
		d := def.New()
		if _, ok := d.(Deleter); ok && !declared(OpDelete) {
			out = append(out, builtin{deleteOp, IndexDelete})
		}
		if _, ok := d.(Scanner); ok && !declared(OpScan) {
			out = append(out, builtin{scanOp, IndexScan})
		}
	}
	if !declared(OpRMW) {
		out = append(out, builtin{rmwOp, IndexRMW})
	}
	if !declared(OpInsert) {
		out = append(out, builtin{insertOp, IndexInsert})
	}
	return out
}

// checkOperations is Register's check of the declared operations.
func checkOperations(def Definition) error {
	seen := map[string]bool{OpRead: true, OpWrite: true}
	for _, o := range def.Operations {
		if err := checkOperationName(o.Name); err != nil {
			return err
		}
		if seen[o.Name] {
			return fmt.Errorf("operation %q declared twice (read and write are every driver's)", o.Name)
		}
		seen[o.Name] = true
		if o.Kind >= numKinds {
			return fmt.Errorf("operation %q: unknown kind %d", o.Name, o.Kind)
		}
		if o.Kind == KindRMW || o.Kind == KindScan || o.Kind == KindInsert {
			return fmt.Errorf("operation %q: kind %s is the built-in %s operation's; declare the driver's own as kind read, write, other or delete", o.Name, o.Kind, o.Kind)
		}
	}
	if len(def.Operations) > 0 {
		if _, ok := def.New().(Operator); !ok {
			return fmt.Errorf("declares %d operations but its driver does not implement driver.Operator", len(def.Operations))
		}
	}
	return nil
}

func checkOperationName(name string) error {
	if name == "" || len(name) > 32 {
		return fmt.Errorf("operation name %q: want 1 to 32 characters", name)
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("operation name %q: want a letter, then letters and digits", name)
		}
	}
	return nil
}
