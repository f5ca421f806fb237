package middleware

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
)

func TestRecover(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	calls := 0
	h := Recover(logger)(func(ctx context.Context, call *Call) (any, error) {
		calls++
		if calls == 1 {
			panic("secret-42: row 12 of table customers")
		}
		return "fine", nil
	})
	call := &Call{Command: "customers_show", Origin: Agent}

	result, err := h(t.Context(), call)
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a *PanicError", err, err)
	}
	if result != nil {
		t.Errorf("result = %v, want nil", result)
	}
	if got, want := err.Error(), "internal error in customers_show"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if strings.Contains(err.Error(), "secret-42") {
		t.Error("the error text leaks the panic value")
	}
	if pe.Command != "customers_show" || pe.Value != "secret-42: row 12 of table customers" {
		t.Errorf("PanicError = {%q, %v}", pe.Command, pe.Value)
	}
	if !bytes.Contains(pe.Stack, []byte("recover_test.go")) {
		t.Errorf("Stack does not show the panicking frame:\n%s", pe.Stack)
	}
	for _, want := range []string{`"level":"ERROR"`, `"command":"customers_show"`, `"origin":"agent"`, "secret-42", "recover_test.go"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}

	// The handler, and this goroutine, live on.
	if result, err := h(t.Context(), call); err != nil || result != "fine" {
		t.Errorf("after the panic: %v, %v; want fine, nil", result, err)
	}
}

func TestRecoverPanicNil(t *testing.T) {
	h := Recover(slog.New(slog.DiscardHandler))(func(context.Context, *Call) (any, error) {
		panic(nil)
	})
	_, err := h(t.Context(), &Call{Command: "c"})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *PanicError", err)
	}
	var pn *runtime.PanicNilError
	if v, _ := pe.Value.(error); !errors.As(v, &pn) {
		t.Errorf("Value = %v, want a *runtime.PanicNilError", pe.Value)
	}
}

func TestRecoverPassesResults(t *testing.T) {
	boom := errors.New("boom")
	h := Recover(nil)(func(context.Context, *Call) (any, error) { return 7, boom })
	if result, err := h(t.Context(), &Call{}); result != 7 || err != boom {
		t.Errorf("got %v, %v; want 7, boom", result, err)
	}
}
