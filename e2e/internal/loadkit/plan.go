package loadkit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CustomerCount is how many customers the example seeds
// (examples/customers/seed.go); a load test checks it before it starts.
const CustomerCount = 60

// ShowURI is the app://customers_show URI of customer id.
func ShowURI(id int64) string { return "app://customers_show/" + strconv.FormatInt(id, 10) }

// ShowID returns the customer of an app://customers_show/{id} URI.
func ShowID(uri string) (int64, bool) {
	rest, ok := strings.CutPrefix(uri, "app://customers_show/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil
}

// A Change is one write of a customer: a name and an email no earlier
// write gave anyone, so that every write changes what the customer's URI
// reads.
type Change struct {
	ID          int64
	Name, Email string
}

// WritePlan returns n changes that cycle through every customer, so that
// at 20 writes/s each customer changes every 3 s (CustomerCount/20): each
// change then stays the customer's last for 3 s, as the last write of the
// run does before the final check, and must be announced to every
// subscriber before the next. A name keeps its original words (names[id])
// so that it still reads as the person.
func WritePlan(n int, names map[int64]string) []Change {
	plan := make([]Change, n)
	for i := range plan {
		id := int64(1 + i%CustomerCount)
		plan[i] = Change{
			ID:    id,
			Name:  fmt.Sprintf("%s r%d", names[id], i),
			Email: fmt.Sprintf("c%d.r%d@load.example", id, i),
		}
	}
	return plan
}

// CallTimeout bounds each request a load test's clients make.
const CallTimeout = 15 * time.Second
