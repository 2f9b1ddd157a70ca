package redisstore

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// CountingHook is a redis.Hook that counts round trips: one per command and one per pipeline,
// which is what go-redis puts on the wire at once before waiting for the answers. Add it with
// client.AddHook(h) and compare Count before and after an operation. Its zero value is ready to
// use and it is safe for concurrent use.
//
// What it counts is what the client asks for. The handshake of a new connection (HELLO and a
// pipeline of CLIENT SETINFO) counts too, so measure with warm connections; a command go-redis
// resends after a broken connection, or a cluster redirect, counts once.
type CountingHook struct {
	n atomic.Int64
}

// Count returns the number of round trips counted so far.
func (h *CountingHook) Count() int64 { return h.n.Load() }

// DialHook leaves dialling alone: opening a connection is not a command.
func (h *CountingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts each command.
func (h *CountingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts each pipeline (or transaction) once.
func (h *CountingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}
