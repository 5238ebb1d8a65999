//go:build !lattrace

// Package lattrace records timestamps at the stages of a publish, for
// latency breakdowns. It is compiled in only with -tags lattrace; in a
// normal build Mark is empty and inlined away.
package lattrace

// On reports whether marks are recorded.
const On = false

// Mark records stage with arg (nothing in a normal build).
func Mark(stage string, arg int) {}
