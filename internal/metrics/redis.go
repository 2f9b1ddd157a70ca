package metrics

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisHook is a go-redis hook that times every round trip and counts the failed ones. Add it
// with client.AddHook(m.RedisHook()).
//
// A command is labelled by its name as go-redis reports it (lowercase: "get", "evalsha"); a
// pipeline or transaction is one round trip labelled "pipeline"; opening a connection is
// labelled "dial", and the pipeline of connection set-up commands go-redis sends on a new
// connection (CLIENT SETINFO and SETNAME, SELECT of a database other than 0, AUTH, READONLY)
// "handshake", so that a round trip per turn counts only the turn's own commands whatever
// database the URL names.
//
// A failure is anything but a normal answer, with three exceptions: redis.Nil (a missing key is
// an answer), context.Canceled (the caller gave up, which says nothing about Redis), and an error
// reply to the handshake's HELLO or CLIENT commands (go-redis probes optional features with them,
// such as CLIENT SETINFO, which servers before 7.2 refuse, and carries on without). A deadline
// that expires does count: that is Redis or the network being slow.
type RedisHook struct {
	m *Metrics
}

var _ redis.Hook = (*RedisHook)(nil)

// RedisHook returns a hook that records into m.
func (m *Metrics) RedisHook() *RedisHook { return &RedisHook{m: m} }

// DialHook times opening a connection.
func (h *RedisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		start := time.Now()
		conn, err := next(ctx, network, addr)
		h.record("dial", start, isFailure(err))
		return conn, err
	}
}

// ProcessHook times each command.
func (h *RedisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.record(cmd.Name(), start, cmdFailed(cmd, err))
		return err
	}
}

// ProcessPipelineHook times each pipeline or transaction as one round trip. It fails when any of
// its commands failed, since go-redis reports only the first error.
func (h *RedisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		label, handshake, audit := "pipeline", len(cmds) > 0, len(cmds) > 0
		failed := false
		for _, cmd := range cmds {
			handshake = handshake && isHandshake(cmd)
			audit = audit && isAudit(cmd)
			failed = failed || cmdFailed(cmd, cmd.Err())
		}
		switch {
		case handshake:
			label = "handshake"
		case audit:
			label = "audit"
		}
		if !failed && !isReply(err) {
			// Without any answer (say, a broken connection) the commands' own errors may be unset.
			failed = isFailure(err)
		}
		h.record(label, start, failed)
		return err
	}
}

func (h *RedisHook) record(command string, start time.Time, failed bool) {
	h.m.redisDuration.WithLabelValues(command).Observe(time.Since(start).Seconds())
	if failed {
		h.m.redisErrors.WithLabelValues(command).Inc()
	}
}

// cmdFailed reports whether err, the outcome of cmd, counts as a failure.
func cmdFailed(cmd redis.Cmder, err error) bool {
	if isHandshake(cmd) && isReply(err) {
		return false
	}
	return isFailure(err)
}

func isHandshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "select", "auth", "readonly":
		return true
	}
	return false
}

// isAudit reports whether cmd writes learner safety's audit (its keys are "…:{audit:<tenant>}"):
// the audit records of all turns go out together every 200 ms (redisstore.AuditBatcher), so
// their round trips are labelled apart from the turns' own.
func isAudit(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) == 0 {
		return false
	}
	// A command's key is its first argument; a script's (EVAL, EVALSHA) follows the script and
	// the number of keys: the audit writes each record through its share script.
	i := 1
	if name, _ := args[0].(string); strings.EqualFold(name, "evalsha") || strings.EqualFold(name, "eval") {
		i = 3
	}
	if len(args) <= i {
		return false
	}
	key, ok := args[i].(string)
	return ok && strings.Contains(key, ":{audit:")
}

// isReply reports whether err is an error reply from the server, rather than no reply.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

func isFailure(err error) bool {
	return err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, context.Canceled)
}
