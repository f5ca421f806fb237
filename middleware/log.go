package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"time"
)

// A LogOption configures Log.
type LogOption func(*logConfig)

type logConfig struct {
	args       bool
	sessionIDs bool
	okLevel    slog.Level
	failLevel  slog.Level
	now        func() time.Time
}

// LogArgs makes Log add the call's RawArgs to each record, as attribute
// "args". It is off by default because arguments may be personal data or
// secrets that do not belong in logs.
func LogArgs() LogOption {
	return func(c *logConfig) { c.args = true }
}

// LogSessionIDs makes Log write the session ID itself as attribute
// "session", rather than its fingerprint. It is off by default because on
// Streamable HTTP the ID is what a client presents to act in its session:
// a credential, which logs are no place for.
func LogSessionIDs() LogOption {
	return func(c *logConfig) { c.sessionIDs = true }
}

// LogLevels sets the level of the records of calls that succeed (default
// slog.LevelDebug) and of calls that fail (default slog.LevelWarn). A failed
// call is usually the agent's mistake or a refusal, not the server's fault,
// hence not Error; Recover logs panics at Error on its own.
func LogLevels(ok, failed slog.Level) LogOption {
	return func(c *logConfig) { c.okLevel, c.failLevel = ok, failed }
}

// withLogClock replaces time.Now, so that tests see fixed durations.
func withLogClock(now func() time.Time) LogOption {
	return func(c *logConfig) { c.now = now }
}

// Log writes one record per call to logger (slog.Default() if nil), with
// message "command" and these attributes:
//
//	command   the command's name
//	origin    "app", "agent" or "live"
//	session   when the call has a session with an ID, the ID's fingerprint:
//	          16 hex digits of its SHA-256, the same for every call of the
//	          session, from which the ID cannot be read back (the ID itself
//	          with LogSessionIDs)
//	duration  how long the rest of the chain and the command took
//	outcome   "ok", "error", or "panic" for a panic passing through (or a
//	          runtime.Goexit: Log does not recover, so it cannot tell one
//	          from the other; neither returns)
//	error     the error's text, when outcome is "error"
//	args      the RawArgs, only with LogArgs
//
// The record of a call that panics through Log is written at the failure
// level and the panic goes on; put Recover inside Log to log it as an error
// instead (Default does).
func Log(logger *slog.Logger, opts ...LogOption) Middleware {
	cfg := logConfig{okLevel: slog.LevelDebug, failLevel: slog.LevelWarn, now: time.Now}
	for _, opt := range opts {
		opt(&cfg)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, call *Call) (result any, err error) {
			l := orDefault(logger)
			// Skip the clock and the attributes when no record would be
			// written either way: Live re-runs can be frequent.
			if !l.Enabled(ctx, cfg.okLevel) && !l.Enabled(ctx, cfg.failLevel) {
				return next(ctx, call)
			}
			start := cfg.now()
			returned := false
			defer func() {
				level, outcome := cfg.okLevel, "ok"
				switch {
				case !returned:
					// Deferred functions run while a panic unwinds; note it
					// without recovering, which is Recover's job.
					level, outcome = cfg.failLevel, "panic"
				case err != nil:
					level, outcome = cfg.failLevel, "error"
				}
				if !l.Enabled(ctx, level) {
					return
				}
				attrs := make([]slog.Attr, 0, 7)
				attrs = append(attrs,
					slog.String("command", call.Command),
					slog.String("origin", call.Origin.String()))
				if call.Session != nil {
					if id := call.Session.SessionID(); id != "" {
						if !cfg.sessionIDs {
							id = sessionFingerprint(id)
						}
						attrs = append(attrs, slog.String("session", id))
					}
				}
				attrs = append(attrs,
					slog.Duration("duration", cfg.now().Sub(start)),
					slog.String("outcome", outcome))
				if returned && err != nil {
					attrs = append(attrs, slog.String("error", err.Error()))
				}
				if cfg.args {
					attrs = append(attrs, slog.String("args", string(call.RawArgs)))
				}
				l.LogAttrs(ctx, level, "command", attrs...)
			}()
			result, err = next(ctx, call)
			returned = true
			return result, err
		}
	}
}

// sessionFingerprint stands for a session ID in logs: 16 hex digits of its
// SHA-256. Session IDs are random and long (mcp-go's are UUIDs), so the ID
// cannot be found from it, while the records of one session still match.
func sessionFingerprint(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}
