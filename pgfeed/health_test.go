package pgfeed_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// serve runs one GET against h and checks that the body is a Health.
func serve(t *testing.T, h http.Handler) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if _, ok := body["connected"]; !ok {
		t.Errorf("body %q has no \"connected\"", rec.Body)
	}
	return rec.Code
}
