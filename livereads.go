package adapter

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Reads records, inside a live command, what this run of it read, so that a
// subscription to it re-runs when a write changes any of it (see
// Adapter.Changed).
//
// A key names data in the application's own terms. Two forms are
// understood:
//
//   - a table: "customers";
//   - a row of a table: the table, a slash and the row's id: "customers/12".
//
// A change of key k affects a run that read key r when k == r, or when one
// of the two is the table of the other. The table of a key is what precedes
// its first slash (the key itself when it has none). So a change of
// "customers/12" re-runs the queries that read "customers/12" or the whole
// of "customers", but not one that read only "customers/13"; a change of
// "customers" re-runs every query that read "customers" or any row of it.
// A command that reports rows rather than tables therefore narrows its
// re-runs without any other change: writers may keep reporting tables, and
// a writer that reports rows narrows them further.
//
//	func showCustomer(ctx context.Context, args ShowArgs) (Customer, error) {
//		adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
//		return db.customer(ctx, args.ID)
//	}
//
// Report what the run actually read, including what it found missing: a
// query that answered ErrNotFound for customer 12 read "customers/12" too.
// Keys a command always reads can be declared once with WithReads. A run
// that reports no key at all and whose command declares none re-runs on
// every change, since nothing says what it depends on.
//
// Reads is safe for concurrent use by goroutines of one run. Outside a
// subscription's run (a plain tools/call or resources/read, or a context
// the adapter did not make) it does nothing, so commands call it
// unconditionally. Empty keys are ignored. A nil ctx panics.
//
// In a batched re-run (WithBatch), Reads records keys that every argument
// set of the batch read; ReadsAt records those of one.
func Reads(ctx context.Context, keys ...string) {
	if ctx == nil {
		panic("adapter: Reads: nil context") // as Close(nil): named, not a nil dereference
	}
	record(ctx, -1, keys)
}

// ReadsAt records, inside the batch form of a live command (WithBatch), that
// argument set i of the batch, args[i], read keys: it is what Reads is to a
// single run. A batch function calls it for each argument set, with the
// keys that set's own run would report, so that a later change re-runs only
// the subscriptions it affects:
//
//	for i, a := range args {
//		adapter.ReadsAt(ctx, i, fmt.Sprintf("customers/%d", a.ID))
//	}
//
// Outside a batched re-run, and for an i out of the batch's range, it
// records keys as Reads does, for the whole run: more re-runs, never fewer.
// So a single form that calls its batch form with one argument set reports
// what it read.
func ReadsAt(ctx context.Context, i int, keys ...string) {
	if ctx == nil {
		panic("adapter: ReadsAt: nil context")
	}
	record(ctx, i, keys)
}

// record records keys for argument set i in the recorder ctx carries: a
// re-run's context (livecontext.go), or a first run's recorder
// (withReadRecorder).
func record(ctx context.Context, i int, keys []string) {
	switch rec := ctx.Value(readRecorderKey{}).(type) {
	case *runContext:
		rec.record(i, keys)
	case *readRecorder:
		rec.add(0, i, keys)
	}
}

type readRecorderKey struct{}

// readRecorder collects the keys one run of a live query reports, or, for
// a batched run, those of each of its argument sets.
//
// A worker reuses one recorder for the runs it makes one after another
// (start); gen is the run it records, so that a context a command kept
// records nothing into the runs after its own.
type readRecorder struct {
	mu    sync.Mutex
	keys  []string // read by the whole run
	batch *batchReads
	gen   uint64
	done  bool // the run has returned; late reports are ignored
	// small is the first array of keys, so that a run that reads a key or
	// two allocates nothing for it.
	small [2]string
}

// batchReads is what a batched run's recorder keeps besides.
type batchReads struct {
	per     [][]string // read by argument set i alone
	scratch []string   // where each set's read set is put together
}

// start readies the recorder for a new run and returns its generation.
func (r *readRecorder) start() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.batch, r.done = nil, false
	clear(r.keys) // keep no key of an earlier run alive
	if r.keys = r.keys[:0]; cap(r.keys) <= len(r.small) || cap(r.keys) > maxKeptReads {
		r.keys = r.small[:0]
	}
	return r.gen
}

// maxKeptReads is how many keys' room a recorder keeps for its next run.
const maxKeptReads = 64

// forBatch makes the recorder one of a batched run of n argument sets.
func (r *readRecorder) forBatch(n int) {
	r.batch = &batchReads{per: make([][]string, n)}
}

func withReadRecorder(ctx context.Context) (context.Context, *readRecorder) {
	rec := &readRecorder{}
	rec.keys = rec.small[:0]
	return context.WithValue(ctx, readRecorderKey{}, rec), rec
}

// add records keys for argument set i, or for the whole run when i is not
// one (-1 for Reads), if gen is the run the recorder records and it has
// not returned.
func (r *readRecorder) add(gen uint64, i int, keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || r.gen != gen {
		return
	}
	dst := &r.keys
	if b := r.batch; b != nil && i >= 0 && i < len(b.per) {
		dst = &b.per[i]
	}
	for _, k := range keys {
		if k != "" {
			*dst = append(*dst, k)
		}
	}
}

// finish closes the recorder of a single run and returns its keys and
// static, sorted and without duplicates: the read set of the run.
func (r *readRecorder) finish(static []string) []string {
	r.close()
	return r.readSet(-1, static, nil)
}

// close makes the recorder ignore what is reported from now on.
func (r *readRecorder) close() {
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
}

// readSet returns, once the recorder is closed, the read set of argument
// set i of a batch (-1 for a single run): the run's keys, i's and static,
// sorted and without duplicates. When that equals prev, the read set a
// query had, it returns prev itself, so that a re-run that read what it
// read before allocates nothing for it.
func (r *readRecorder) readSet(i int, static, prev []string) []string {
	set := r.keys
	if i >= 0 {
		// The run's keys are every argument set's: put each set
		// together apart from them.
		set = append(append(r.batch.scratch[:0], r.keys...), r.batch.per[i]...)
	}
	for _, k := range static {
		if k != "" {
			set = append(set, k)
		}
	}
	if i >= 0 {
		r.batch.scratch = set
	}
	if len(set) == 0 {
		return nil
	}
	slices.Sort(set)
	set = slices.Compact(set)
	if slices.Equal(set, prev) {
		return prev
	}
	return slices.Clone(set)
}

// tableOf returns the table a key belongs to: what precedes its first
// slash, or the key itself.
func tableOf(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return key
}

// readIndex finds the live queries a change affects without looking at the
// others. Every query is filed under each key it read (exact) and under the
// table of each (table); a query that read nothing is blind and is affected
// by every change.
//
// Each entry keeps its query's sequence number (query.seq), which Changed
// orders the queries by: read from the query itself, a change reaching a
// thousand queries paid a cache miss for each before scheduling any.
type readIndex struct {
	exact map[string]querySet
	table map[string]querySet
	blind querySet
}

// querySet is a set of queries, each with its sequence number.
type querySet map[*query]uint64

func newReadIndex() readIndex {
	return readIndex{
		exact: make(map[string]querySet),
		table: make(map[string]querySet),
		blind: make(querySet),
	}
}

// add files q under reads, a sorted read set without duplicates.
func (ix *readIndex) add(q *query, reads []string) {
	if len(reads) == 0 {
		ix.blind[q] = q.seq
		return
	}
	for _, k := range reads {
		indexPut(ix.exact, k, q)
		indexPut(ix.table, tableOf(k), q)
	}
}

// remove undoes add(q, reads).
func (ix *readIndex) remove(q *query, reads []string) {
	if len(reads) == 0 {
		delete(ix.blind, q)
		return
	}
	for _, k := range reads {
		indexDel(ix.exact, k, q)
		indexDel(ix.table, tableOf(k), q)
	}
}

// affected calls fn for every query a change of key affects, with its
// sequence number; a query may be given more than once.
func (ix *readIndex) affected(key string, fn func(q *query, seq uint64)) {
	t := tableOf(key)
	if t == key {
		for q, seq := range ix.table[t] {
			fn(q, seq)
		}
	} else {
		for q, seq := range ix.exact[key] {
			fn(q, seq)
		}
		for q, seq := range ix.exact[t] {
			fn(q, seq)
		}
	}
	for q, seq := range ix.blind {
		fn(q, seq)
	}
}

func indexPut(m map[string]querySet, k string, q *query) {
	set := m[k]
	if set == nil {
		set = make(querySet, 1)
		m[k] = set
	}
	set[q] = q.seq
}

func indexDel(m map[string]querySet, k string, q *query) {
	set := m[k]
	delete(set, q)
	if len(set) == 0 {
		delete(m, k)
	}
}
