package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestTakenAddress serves on an address another listener holds: run fails,
// naming the address, before it logs that it serves (and main then exits
// with status 1, saying why).
func TestTakenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	err = run(t.Context(), config{addr: ln.Addr().String()}, strings.NewReader(""), io.Discard, logger)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("run on a taken address: %v, want an error naming %s", err, ln.Addr())
	}
	if strings.Contains(log.String(), "serving") {
		t.Errorf("run on a taken address logged that it serves:\n%s", log.String())
	}
}
