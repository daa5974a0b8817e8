// Package gremlin is the ndbench driver for JanusGraph and any other Apache TinkerPop
// Gremlin Server.
package gremlin
