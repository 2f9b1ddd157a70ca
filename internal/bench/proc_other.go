//go:build !unix

package bench

import "time"

// cpuTime is not measured on this system.
func cpuTime() (user, sys time.Duration) { return 0, 0 }

// rss is not measured on this system.
func rss() int64 { return 0 }

// raiseFileLimit has nothing to raise on this system.
func raiseFileLimit() (uint64, error) { return 0, nil }

// cpuTicks is not measured on this system.
func cpuTicks() (busy, total uint64) { return 0, 0 }
