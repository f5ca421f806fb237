package adapter

import "testing"

// listenRequestID finds a listen request however its method is spelled
// in JSON, so that Close can cut its stream short like any other.
func TestListenRequestID(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{}}`, `7`},
		{`{"jsonrpc":"2.0","id":"a","method":"subscriptions\/listen","params":{}}`, `"a"`},
		{`{"jsonrpc":"2.0","id":8,"method":"\u0073ubscriptions/listen"}`, `8`},
		{`{"jsonrpc":"2.0","ID":9,"method":"subscriptions/listen"}`, `9`},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a\/b"}}`, ``},
		{`{"jsonrpc":"2.0","method":"subscriptions/listen"}`, ``},
		{`{"jsonrpc":"2.0","id":null,"method":"subscriptions/listen"}`, ``},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"subscriptions/listen"}}`, ``},
	} {
		if got := string(listenRequestID([]byte(tc.body))); got != tc.want {
			t.Errorf("listenRequestID(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
