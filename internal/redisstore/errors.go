package redisstore

import (
	"errors"
	"fmt"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/redis/go-redis/v9"
)

// unavailable carries a failure to get an answer from Redis. It matches coach.ErrUnavailable
// under errors.Is, so callers may test either that or the *coach.Error's code around it.
type unavailable struct {
	op    string
	cause error
}

func (u *unavailable) Error() string { return "redis " + u.op + ": " + u.cause.Error() }

func (u *unavailable) Unwrap() error { return u.cause }

// Is reports whether target is coach.ErrUnavailable.
func (u *unavailable) Is(target error) bool { return target == coach.ErrUnavailable }

// failure turns an error of operation op into a *coach.Error: KindUnavailable when Redis could not
// be reached or cannot serve right now, KindInternal otherwise.
func failure(op string, err error) error {
	if isUnavailable(err) {
		return coach.Wrap(&unavailable{op: op, cause: err}, coach.KindUnavailable, coach.CodeStoreUnavailable,
			"the session store is unavailable")
	}
	return coach.Wrap(fmt.Errorf("redis %s: %w", op, err), coach.KindInternal, coach.CodeInternal,
		"the session store failed")
}

// isUnavailable reports whether err means "try again later" rather than a bug. Anything that is
// not a reply from the server is: no reply came (refused, reset, timed out, pool exhausted,
// client closed, context ended). Of the replies, those where the server says it cannot serve
// now or not this client are; the rest (script errors, wrong types) are bugs.
func isUnavailable(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err) || redis.IsMaxClientsError(err) ||
		redis.IsNoReplicasError(err) || redis.IsOOMError(err) || redis.IsAuthError(err) ||
		redis.IsPermissionError(err) || redis.HasErrorPrefix(err, "BUSY")
}
