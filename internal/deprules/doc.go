// Package deprules holds no code, only the test that enforces DESIGN.md's dependency rule
// ("the engine does not import config sources; report does not import web", nor does
// compare, which reads reports; the public plugin APIs, driver and driver/keydist, import
// nothing internal), so the rule fails a build instead of eroding one convenient import at
// a time.
package deprules
