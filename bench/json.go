package bench

import "encoding/json"

// jsonText encodes v as the adapter does, for the native baselines.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
