package ndbenchapi

import "github.com/ndbench/ndbench/internal/control"

// Node is what NDBench's routes drive: the one node interface (control.Node), which a
// node, a fleet view fanning out to peers and a test double all implement. Errors are
// those of package node (ErrNotInitialized, ...), which the routes turn into NDBench's
// answers.
type Node = control.Node
