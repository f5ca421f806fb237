package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"testing"
	"time"
)

// steppingClock advances by step on every reading, so that every call takes
// exactly step.
func steppingClock(step time.Duration) func() time.Time {
	t := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

func TestLog(t *testing.T) {
	failure := errors.New("no such customer")
	args := json.RawMessage(`{"id":12}`)
	tests := []struct {
		name  string
		opts  []LogOption
		call  Call
		err   error
		level slog.Leveler // of the handler; nil means Debug
		want  map[string]any
	}{
		{
			name: "success",
			call: Call{Command: "customers_show", Origin: Agent, Session: &fakeSession{id: "s1"}, RawArgs: args},
			want: map[string]any{"level": "DEBUG", "msg": "command", "command": "customers_show",
				"origin": "agent", "session": sessionFingerprint("s1"), "duration": float64(5 * time.Millisecond), "outcome": "ok"},
		},
		{
			name: "session ID itself",
			opts: []LogOption{LogSessionIDs()},
			call: Call{Command: "c", Origin: Agent, Session: &fakeSession{id: "s1"}},
			want: map[string]any{"level": "DEBUG", "msg": "command", "command": "c",
				"origin": "agent", "session": "s1", "duration": float64(5 * time.Millisecond), "outcome": "ok"},
		},
		{
			name: "error",
			call: Call{Command: "customers_show", Origin: Agent, RawArgs: args},
			err:  failure,
			want: map[string]any{"level": "WARN", "msg": "command", "command": "customers_show",
				"origin": "agent", "duration": float64(5 * time.Millisecond), "outcome": "error",
				"error": "no such customer"},
		},
		{
			name: "session without ID",
			call: Call{Command: "c", Origin: Agent, Session: &fakeSession{}},
			want: map[string]any{"level": "DEBUG", "msg": "command", "command": "c",
				"origin": "agent", "duration": float64(5 * time.Millisecond), "outcome": "ok"},
		},
		{
			name: "args",
			opts: []LogOption{LogArgs()},
			call: Call{Command: "c", Origin: Live, RawArgs: args},
			want: map[string]any{"level": "DEBUG", "msg": "command", "command": "c", "origin": "live",
				"duration": float64(5 * time.Millisecond), "outcome": "ok", "args": `{"id":12}`},
		},
		{
			name: "levels",
			opts: []LogOption{LogLevels(slog.LevelInfo, slog.LevelError)},
			call: Call{Command: "c"},
			err:  failure,
			want: map[string]any{"level": "ERROR", "msg": "command", "command": "c", "origin": "app",
				"duration": float64(5 * time.Millisecond), "outcome": "error", "error": "no such customer"},
		},
		{
			name:  "success below the handler's level",
			call:  Call{Command: "c"},
			level: slog.LevelInfo,
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			level := tt.level
			if level == nil {
				level = slog.LevelDebug
			}
			logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
				Level:       level,
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
			}))
			opts := append([]LogOption{withLogClock(steppingClock(5 * time.Millisecond))}, tt.opts...)
			h := Log(logger, opts...)(func(context.Context, *Call) (any, error) { return "r", tt.err })
			result, err := h(t.Context(), &tt.call)
			if result != "r" || err != tt.err {
				t.Errorf("Log changed the outcome: %v, %v", result, err)
			}
			if tt.want == nil {
				if buf.Len() != 0 {
					t.Errorf("logged %s, want nothing", buf.String())
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("want one JSON record, got %q: %v", buf.String(), err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("record = %v\nwant     %v", got, tt.want)
			}
		})
	}
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestLogPanicPassesThrough(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	h := Log(logger)(func(context.Context, *Call) (any, error) { panic("boom") })
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the panic to go on", v)
			}
		}()
		_, _ = h(t.Context(), &Call{Command: "c", Origin: Agent})
	}()
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("want one record, got %q", buf.String())
	}
	if got["outcome"] != "panic" || got["level"] != "WARN" {
		t.Errorf("record = %v, want outcome panic at WARN", got)
	}
	if _, ok := got["error"]; ok {
		t.Errorf("record = %v has an error attribute for a panic", got)
	}
}

func TestDefault(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	h := Default(logger)(func(context.Context, *Call) (any, error) { panic("secret") })
	_, err := h(t.Context(), &Call{Command: "c", Origin: Agent})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *PanicError", err)
	}
	// Two records: Recover's with the details, then Log's for the call.
	dec := json.NewDecoder(&buf)
	var recovered, logged map[string]any
	if err := dec.Decode(&recovered); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&logged); err != nil {
		t.Fatal(err)
	}
	if recovered["msg"] != "command panicked" || recovered["panic"] != "secret" {
		t.Errorf("first record = %v, want Recover's", recovered)
	}
	if logged["outcome"] != "error" || logged["error"] != "internal error in c" {
		t.Errorf("second record = %v, want Log's with the PanicError", logged)
	}
	if dec.More() {
		t.Error("more than two records")
	}
}

// A session's fingerprint is the same for each of its calls, differs from
// another session's, and does not contain the ID.
func TestLogSessionFingerprint(t *testing.T) {
	const id = "3f2a9c1e-7b4d-4e8a-9f00-5c6d7e8f9a0b"
	var buf bytes.Buffer
	mw := Log(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h := mw(func(context.Context, *Call) (any, error) { return nil, nil })
	for _, sid := range []string{id, id, "another"} {
		if _, err := h(context.Background(), &Call{Command: "c", Origin: Agent, Session: &fakeSession{id: sid}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		s, _ := rec["session"].(string)
		got = append(got, s)
	}
	if len(got) != 3 || len(got[0]) != 16 || got[0] != got[1] || got[0] == got[2] {
		t.Fatalf("session attributes %q: want one 16-digit fingerprint per session", got)
	}
	if bytes.Contains(buf.Bytes(), []byte(id)) || bytes.Contains(buf.Bytes(), []byte(id[:8])) {
		t.Fatalf("the log holds the session ID: %s", buf.Bytes())
	}
}
