package adapter

import "context"

// A Completer suggests values for one variable of a command's template, for
// completion/complete. prefix is what the user typed so far; args holds the
// other variables the client already filled in (context.arguments),
// converted to their typed values where they convert and left as strings
// where they do not. The adapter filters nothing: return the values that
// fit prefix, best first; at most 100 are sent.
type Completer func(ctx context.Context, prefix string, args map[string]any) ([]string, error)

// CompleteWith registers c as the completer of the template variable named
// variable. Declaring it for a name that is not a variable of the command's
// template panics at Live, like any other declaration error.
func CompleteWith(variable string, c Completer) CommandOption {
	return func(cc *commandConfig) {
		if cc.completers == nil {
			cc.completers = make(map[string]Completer)
		}
		cc.completers[variable] = c
	}
}
