package driver

import (
	"context"
	"fmt"
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
	// delete, a counter increment, an HTTP route that is neither.
	KindOther
	numKinds
)

var kindNames = [numKinds]string{"read", "write", "other"}

// String returns "read", "write" or "other".
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
	return fmt.Errorf("operation kind %q: want read, write or other", b)
}

// The operations every driver offers through the base contract.
const (
	// OpRead is the name of Driver.Read as an operation.
	OpRead = "read"
	// OpWrite is the name of Driver.Write as an operation.
	OpWrite = "write"
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

// The base contract's operations as declarations.
var (
	readOp  = Operation{Name: OpRead, Kind: KindRead, Help: "read one key (Driver.Read)"}
	writeOp = Operation{Name: OpWrite, Kind: KindWrite, Help: "write one key (Driver.Write)"}
)

// AllOperations returns every operation def's drivers offer: read, write, then its
// declared Operations in order.
func (def Definition) AllOperations() []Operation {
	return append([]Operation{readOp, writeOp}, def.Operations...)
}

// OperationNames returns the names of AllOperations.
func (def Definition) OperationNames() []string {
	var names []string
	for _, o := range def.AllOperations() {
		names = append(names, o.Name)
	}
	return names
}

// Operation returns the operation named name and its index for Operator.Do; read and
// write have index -1 and -2 (they are Driver.Read and Driver.Write, not Do).
func (def Definition) Operation(name string) (Operation, int, bool) {
	switch name {
	case OpRead:
		return readOp, -1, true
	case OpWrite:
		return writeOp, -2, true
	}
	for i, o := range def.Operations {
		if o.Name == name {
			return o, i, true
		}
	}
	return Operation{}, 0, false
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
