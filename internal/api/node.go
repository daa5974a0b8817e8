package api

import "github.com/ndbench/ndbench/internal/control"

// Node is what the API drives: the one node interface (control.Node), *node.Node in a
// process, or a fleet view (a coordinator fanning out to peers and merging their
// intervals), or a test double, all serving the same routes.
type Node = control.Node
