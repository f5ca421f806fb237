package gosdk

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The references of the completion checks. orders_between's status is an
// enum (open, paid, cancelled), which the adapter completes by itself; the
// example declares no completer (adapter.CompleteWith), so a completer's
// own errors cannot be reached through it.
const (
	ordersTemplate = "app://orders_between/{from}/{to}{?status}" // as resources/templates/list lists it
	ordersURI      = "app://orders_between/2024-01-01/2024-01-31"
	// A path segment short: resolving it fails, as a read of it does.
	ordersShortURI = "app://orders_between/2024-01-01"
	// An id that is no integer: it resolves, and its arguments do not
	// convert.
	showBadIDURI = "app://customers_show/abc"
)

// TestCompleteWithGoSDK completes through go-sdk on each era over each
// transport: the template string as resources/templates/list lists it and a
// valid expanded URI complete, and an expanded URI a read would refuse is
// refused with the read's error, code and data as go-sdk hands them over.
//
// resource-not-found is -32002 before 2026-07-28 and -32602 from it; a
// reference whose arguments do not convert is -32602 on both.
func TestCompleteWithGoSDK(t *testing.T) { eachTransportAndEra(t, completeScenario) }

func completeScenario(t *testing.T, ctx context.Context, w *watcher) {
	// 1. The template string, exactly as resources/templates/list lists
	// it, completes.
	templates := w.templates(ctx)
	if !slices.Contains(templates, ordersTemplate) {
		t.Fatalf("resources/templates/list lists %q, want it to hold %q", templates, ordersTemplate)
	}
	got, err := w.complete(ctx, ordersTemplate, "status", "p")
	if err != nil {
		t.Fatalf("complete status %q of the template %s: %v", "p", ordersTemplate, err)
	}
	if want := []string{"paid"}; !slices.Equal(got.Values, want) || got.Total != 1 || got.HasMore {
		t.Errorf("complete status %q of the template %s: %+v, want values %q, total 1", "p", ordersTemplate, got, want)
	}

	// 2. A valid expanded URI completes too.
	got, err = w.complete(ctx, ordersURI, "status", "")
	if err != nil {
		t.Fatalf("complete status of %s: %v", ordersURI, err)
	}
	if want := []string{"open", "paid", "cancelled"}; !slices.Equal(got.Values, want) || got.Total != 3 {
		t.Errorf("complete status of %s: %+v, want values %q, total 3", ordersURI, got, want)
	}

	// 3. An expanded URI a read refuses as not found is refused with the
	// read's error: resource-not-found naming the reference.
	notFound := int64(-32002)
	if w.era == modernEra {
		notFound = jsonrpc.CodeInvalidParams
	}
	_, err = w.complete(ctx, ordersShortURI, "status", "")
	werr := wireError(t, "complete status of "+ordersShortURI, err)
	var uriData struct {
		URI string `json:"uri"`
	}
	if werr.Code != notFound || json.Unmarshal(werr.Data, &uriData) != nil || uriData.URI != ordersShortURI {
		t.Errorf("complete status of %s: code %d, data %s; want %d (resource not found) with data.uri the reference", ordersShortURI, werr.Code, werr.Data, notFound)
	}
	w.sameAsRead(ctx, ordersShortURI, werr)

	// 4. An expanded URI whose argument does not convert is refused as the
	// read refuses it: -32602 naming the field in data.errors.
	_, err = w.complete(ctx, showBadIDURI, "id", "")
	werr = wireError(t, "complete id of "+showBadIDURI, err)
	var fields struct {
		Errors []struct {
			Field, Message string
		} `json:"errors"`
	}
	if werr.Code != jsonrpc.CodeInvalidParams || json.Unmarshal(werr.Data, &fields) != nil ||
		len(fields.Errors) != 1 || fields.Errors[0].Field != "id" {
		t.Errorf("complete id of %s: code %d, data %s; want %d with data.errors naming id", showBadIDURI, werr.Code, werr.Data, jsonrpc.CodeInvalidParams)
	}
	w.sameAsRead(ctx, showBadIDURI, werr)
}

// templates lists the URI templates of resources/templates/list.
func (w *watcher) templates(ctx context.Context) []string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := w.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		w.t.Fatalf("resources/templates/list: %v", err)
	}
	var out []string
	for _, rt := range res.ResourceTemplates {
		out = append(out, rt.URITemplate)
	}
	return out
}

// complete asks completion/complete for the variable name of the resource
// reference ref, with the prefix value.
func (w *watcher) complete(ctx context.Context, ref, name, value string) (mcp.CompletionResultDetails, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := w.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: ref},
		Argument: mcp.CompleteParamsArgument{Name: name, Value: value},
	})
	if err != nil {
		return mcp.CompletionResultDetails{}, err
	}
	return res.Completion, nil
}

// sameAsRead checks that a resources/read of uri fails with exactly the
// error the completion got.
func (w *watcher) sameAsRead(ctx context.Context, uri string, completion *jsonrpc.Error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := w.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	read := wireError(w.t, "resources/read "+uri, err)
	if read.Code != completion.Code || read.Message != completion.Message || string(read.Data) != string(completion.Data) {
		w.t.Errorf("the completion of %s answers unlike its read:\nread       %d %q %s\ncompletion %d %q %s",
			uri, read.Code, read.Message, read.Data, completion.Code, completion.Message, completion.Data)
	}
}

// wireError is the JSON-RPC error go-sdk returned for what; the test fails
// if there is none.
func wireError(t *testing.T, what string, err error) *jsonrpc.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want a JSON-RPC error", what)
	}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("%s: error %v (%T), want a JSON-RPC error", what, err, err)
	}
	return werr
}
