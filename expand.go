package adapter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxURILength is the longest expanded URI parse accepts, in bytes. It bounds
// the work one resources/read or subscription can ask of the server.
const maxURILength = 2048

// maxURIInError is how much of a URI a uriError message repeats, so that a
// 2 KiB URI does not flood logs and error replies.
const maxURIInError = 200

// uriError says why a URI does not fit a template. The caller answers it as
// resource-not-found: a malformed URI names no resource, exactly like a URI
// no command owns.
type uriError struct {
	uri    string
	reason string
}

// Error names the URI (shortened, quoted when it holds unprintable
// characters) and what exactly was wrong with it.
func (e *uriError) Error() string {
	return "resource not found: " + displayURI(e.uri) + ": " + e.reason
}

// displayURI shortens uri to about maxURIInError bytes on a rune boundary and
// quotes it when it holds characters that should not reach a log verbatim.
func displayURI(uri string) string {
	if len(uri) > maxURIInError {
		cut := maxURIInError
		for cut > 0 && !utf8.RuneStart(uri[cut]) {
			cut--
		}
		uri = uri[:cut] + "…"
	}
	for _, r := range uri {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(uri)
		}
	}
	return uri
}

// quoteName quotes a query parameter name for an error message, shortened
// because it comes from the client and may be long.
func quoteName(name string) string {
	if cut, ok := cutName(name); ok {
		return strconv.Quote(cut) + "…"
	}
	return strconv.Quote(name)
}

// cutName is name's first 64 bytes, cut at a character's start, and true
// when name is longer; else name and false.
func cutName(name string) (string, bool) {
	const maxName = 64
	if len(name) <= maxName {
		return name, false
	}
	cut := maxName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut], true
}

// splitCommand returns the command name of a URI of the given scheme, the
// cheap ownership test run on every resources/read before a map lookup, so
// that matching costs the same however many commands there are. The name
// ends at "/", "?" or the end of the URI; it is not decoded, and a name
// holding "%" or "#" is refused since no command is spelled that way.
// It allocates nothing: the name is a substring of uri.
func splitCommand(scheme, uri string) (command string, ok bool) {
	n := len(scheme)
	if len(uri) <= n+3 || uri[:n] != scheme || uri[n:n+3] != "://" {
		return "", false
	}
	rest := uri[n+3:]
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '/', '?':
			if i == 0 {
				return "", false
			}
			return rest[:i], true
		case '%', '#':
			return "", false
		}
	}
	return rest, true
}

// parse reads an expanded URI strictly into the decoded string of each
// variable it holds, keyed by variable name. Every required variable is in
// the result; an optional one only when the query names it.
//
// The URI is split before anything is decoded: the path at "/", the query
// at "&" and each parameter at its first "=". So a value may hold any of
// these characters when percent-encoded, and "+" is a literal plus, not a
// space: URI templates (RFC 6570) and RFC 3986 know no form encoding.
// Parameter names are compared byte for byte, never decoded. Characters a
// strict URI would percent-encode (space, controls, non-ASCII UTF-8) are
// taken as they come, since clients send such IRIs; only the delimiters
// above and "#" have a meaning.
//
// Any departure from the template is a *uriError: a URI over maxURILength
// bytes, another scheme or command, a fragment, the wrong number of path
// segments (a trailing slash included), an empty path segment, an empty
// query or parameter, a parameter without "=", one the template does not
// name or one given twice, bad percent-encoding, or a value that is not
// valid UTF-8 once decoded.
func (t *uriTemplate) parse(uri string) (map[string]string, error) {
	if len(uri) > maxURILength {
		return nil, t.fail(uri, "URI is %d bytes, longer than the %d allowed", len(uri), maxURILength)
	}
	head := len(t.scheme) + 3 + len(t.command)
	if !t.owns(uri) {
		return nil, t.fail(uri, "URI does not begin with %s", t.prefix())
	}
	if i := strings.IndexByte(uri, '#'); i >= 0 {
		return nil, t.fail(uri, "fragment (\"#\" at byte %d) not allowed", i)
	}
	pathPart, query, hasQuery := cutByte(uri[head:], '?')

	size := len(t.path)
	if hasQuery {
		size += min(len(t.query), strings.Count(query, "&")+1)
	}
	values := make(map[string]string, size)
	if err := t.parsePath(uri, pathPart, head, values); err != nil {
		return nil, err
	}
	if hasQuery {
		if err := t.parseQuery(uri, query, head+len(pathPart)+1, values); err != nil {
			return nil, err
		}
	}
	return values, nil
}

// owns reports whether uri begins with scheme://command followed by "/",
// "?" or its end, without building the prefix string.
func (t *uriTemplate) owns(uri string) bool {
	s, ok := strings.CutPrefix(uri, t.scheme)
	if !ok {
		return false
	}
	if s, ok = strings.CutPrefix(s, "://"); !ok {
		return false
	}
	if s, ok = strings.CutPrefix(s, t.command); !ok {
		return false
	}
	return s == "" || s[0] == '/' || s[0] == '?'
}

// prefix is scheme://command, for error messages only.
func (t *uriTemplate) prefix() string {
	return t.scheme + "://" + t.command
}

// parsePath checks that pathPart (which starts at byte off of uri) holds
// exactly one non-empty "/"-led segment per required variable and stores
// each decoded segment.
func (t *uriTemplate) parsePath(uri, pathPart string, off int, values map[string]string) error {
	got := strings.Count(pathPart, "/")
	if want := len(t.path); got != want {
		if got == want+1 && strings.HasSuffix(pathPart, "/") {
			return t.fail(uri, "trailing slash: expected %s after %s", segments(want), t.prefix())
		}
		return t.fail(uri, "expected %s after %s, got %d", segments(want), t.prefix(), got)
	}
	rest := pathPart
	for i := range t.path {
		// rest starts with the "/" before segment i.
		rest = rest[1:]
		off++
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		seg := rest[:end]
		if seg == "" {
			return t.fail(uri, "path segment {%s} is empty", t.path[i].name)
		}
		v, err := t.unescape(uri, seg, off, "path segment {", t.path[i].name, "}")
		if err != nil {
			return err
		}
		values[t.path[i].name] = v
		rest = rest[end:]
		off += end
	}
	return nil
}

// segments spells a count of path segments for an error message.
func segments(n int) string {
	if n == 1 {
		return "1 path segment"
	}
	return strconv.Itoa(n) + " path segments"
}

// parseQuery reads the "&"-separated parameters of query (which starts at
// byte off of uri) into values: each must be name=value with a name of
// t.query, given at most once, in any order.
func (t *uriTemplate) parseQuery(uri, query string, off int, values map[string]string) error {
	if query == "" {
		return t.fail(uri, "empty query after \"?\"")
	}
	for {
		pair, more, found := cutByte(query, '&')
		if pair == "" {
			return t.fail(uri, "empty query parameter at byte %d", off)
		}
		name, raw, ok := cutByte(pair, '=')
		if !ok {
			return t.fail(uri, "query parameter %s has no \"=\"", quoteName(name))
		}
		v := t.queryVariable(name)
		if v == nil {
			return t.fail(uri, "unknown query parameter %s", quoteName(name))
		}
		if _, dup := values[v.name]; dup {
			return t.fail(uri, "query parameter %q given twice", v.name)
		}
		decoded, err := t.unescape(uri, raw, off+len(name)+1, "query parameter \"", v.name, "\"")
		if err != nil {
			return err
		}
		values[v.name] = decoded
		if !found {
			return nil
		}
		off += len(pair) + 1
		query = more
	}
}

// cutByte is strings.Cut for a one-byte separator, which IndexByte finds
// faster than a substring search.
func cutByte(s string, sep byte) (before, after string, found bool) {
	if i := strings.IndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// queryVariable finds the optional variable called name. Templates have a
// handful of variables, so a scan beats building an index.
func (t *uriTemplate) queryVariable(name string) *variable {
	for i := range t.query {
		if t.query[i].name == name {
			return &t.query[i]
		}
	}
	return nil
}

// unescape percent-decodes s, which starts at byte off of uri, and checks the
// result is valid UTF-8. Without a "%" it returns s itself, allocating
// nothing. The part of the URI is named pre+name+post in error messages
// (pieces, so that the label is only built when it is needed).
func (t *uriTemplate) unescape(uri, s string, off int, pre, name, post string) (string, error) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		if !utf8.ValidString(s) {
			return "", t.fail(uri, "%s%s%s is not valid UTF-8", pre, name, post)
		}
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", t.fail(uri, "invalid percent-encoding at byte %d", off+i)
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		s = s[i+3:]
		off += i + 3
		i = strings.IndexByte(s, '%')
	}
	b.WriteString(s)
	if !utf8.ValidString(b.String()) {
		return "", t.fail(uri, "%s%s%s is not valid UTF-8 once percent-decoded", pre, name, post)
	}
	return b.String(), nil
}

// isHex reports whether c is a hexadecimal digit of either case.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unhex is the value of the hexadecimal digit c.
func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// fail builds the *uriError for uri.
func (t *uriTemplate) fail(uri, format string, args ...any) error {
	return &uriError{uri: uri, reason: fmt.Sprintf(format, args...)}
}

// expand is parse's inverse: the expanded URI of values, the decoded
// string of each variable by name, as RFC 6570 expands {var} and {?var}:
// every byte but the unreserved ones (letters, digits, "-", ".", "_",
// "~") percent-encoded in uppercase hexadecimal, "/", "%", "&", "=", "+",
// space and UTF-8 included, so that any value survives parse unchanged.
// Path values come in template order; the optional values that values
// holds follow in the query, in the template's (name) order. So equal
// values give one URI, and parse gives values back.
//
// ok is false for values no URI of the template spells, which parse would
// refuse or read otherwise: a path variable missing or empty, a name that
// is no variable of the template, a value that is not valid UTF-8 (uri is
// "" then), or a URI longer than maxURILength (uri is that URI, which
// parse refuses).
func (t *uriTemplate) expand(values map[string]string) (uri string, ok bool) {
	var b strings.Builder
	size := len(t.scheme) + 3 + len(t.command)
	for _, v := range values {
		size += 3*len(v) + 2
	}
	for i := range t.query {
		size += len(t.query[i].name)
	}
	b.Grow(size)
	b.WriteString(t.scheme)
	b.WriteString("://")
	b.WriteString(t.command)
	known := 0
	for i := range t.path {
		v, ok := values[t.path[i].name]
		if !ok || v == "" || !utf8.ValidString(v) {
			return "", false
		}
		known++
		b.WriteByte('/')
		writeEscaped(&b, v)
	}
	sep := byte('?')
	for i := range t.query {
		v, ok := values[t.query[i].name]
		if !ok {
			continue
		}
		if !utf8.ValidString(v) {
			return "", false
		}
		known++
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(t.query[i].name)
		b.WriteByte('=')
		writeEscaped(&b, v)
	}
	if known != len(values) {
		return "", false
	}
	return b.String(), b.Len() <= maxURILength
}

// writeEscaped writes s with every byte but the unreserved ones
// percent-encoded in uppercase hexadecimal.
func writeEscaped(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xF])
	}
}

// isUnreserved reports whether c is an RFC 3986 unreserved character, which
// a URI carries as is.
func isUnreserved(c byte) bool {
	return isAlpha(c) || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
