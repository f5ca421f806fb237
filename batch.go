package adapter

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/mcplive/adapter/middleware"
)

// MaxBatch is the most argument sets one call of a batch form (WithBatch)
// is given. More waiting re-runs are split into several calls, which may
// run at once.
const MaxBatch = 256

// WithBatch declares the batch form of a live command: fn answers many
// argument sets in one call, for instance with one SQL query
// (WHERE id IN (...)) where the command would run one each. When a change
// makes several subscribed argument sets of the command re-run at once, the
// registry calls fn with them (at most MaxBatch a call) instead of calling
// the command once per set. The command itself stays what answers reads,
// tools/calls and the first run of each subscription, and what re-runs a
// set alone.
//
// fn's contract:
//
//   - results[i] is the result for args[i], exactly as the command would
//     return it: len(results) == len(args). Each argument set keeps its
//     own result, digest, error and notifications, as if it had run alone.
//   - Some sets may fail while the others succeed: return the results with
//     a BatchErrors, whose entry i is the error of args[i] (nil where it
//     succeeded; results[i] is then ignored where it did not).
//   - Report what each set read with ReadsAt(ctx, i, keys...), and what
//     all of them read with Reads; keys declared with WithReads count for
//     every set.
//
// When the call fails as a whole (any other error, a panic, which the
// chain's Recover turns into an error, or a number of results or errors
// other than len(args)), the failure is logged and each of its argument
// sets runs again alone, with the command: a batch never costs a
// subscriber a notification, and one argument set that breaks the batch's
// query cannot fail the others. Only a call whose context has ended
// (Close, or every set unsubscribed) is not retried: its error is every
// set's, as it would have been for single runs.
//
// The call passes the middleware chain once, with origin middleware.Live:
// the middleware.Call's Args is the []A of the batch, its RawArgs the JSON
// array of their canonical arguments, and its Batch their number. A
// middleware that looks at Args should check Batch first. The whole call is
// bounded by the re-run deadline (WithRerunTimeout), as a single re-run is;
// when it outlives it, every set counts as late.
//
// Live panics, before anything is registered, if fn is nil or its types
// are not the command's, and Command panics on WithBatch: only live
// commands re-run.
func WithBatch[A, R any](fn func(ctx context.Context, args []A) ([]R, error)) CommandOption {
	return func(c *commandConfig) { c.batch = batchDecl{fn: fn, nilFn: fn == nil} }
}

// BatchErrors is the error a batch form (WithBatch) returns when some of
// its argument sets failed and the others did not: entry i is the error of
// args[i], nil for a set that succeeded. It must have len(args) entries.
type BatchErrors []error

func (e BatchErrors) Error() string {
	var b strings.Builder
	n := 0
	for i, err := range e {
		if err == nil {
			continue
		}
		if n++; n == 1 {
			fmt.Fprintf(&b, "argument set %d: %v", i, err)
		}
	}
	if n > 1 {
		fmt.Fprintf(&b, " (and %d more argument sets failed)", n-1)
	}
	return b.String()
}

// Unwrap returns the errors of the sets that failed.
func (e BatchErrors) Unwrap() []error {
	var errs []error
	for _, err := range e {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// batchDecl is what WithBatch was given, before its types are checked.
type batchDecl struct {
	fn    any
	nilFn bool
}

// batchForm is a command's batch form, with the types of its arguments
// and results hidden behind functions, as command.call hides the
// command's.
type batchForm struct {
	// call calls the batch function with args, a []A.
	call func(ctx context.Context, args any) (any, error)
	// args makes the []A of qs' decoded arguments.
	args func(qs []*query) any
	// count returns the number of results in res, a []R, and false when
	// res is not one (a middleware replaced it).
	count func(res any) (int, bool)
	// item returns result i of res.
	item func(res any, i int) any
}

func newBatchForm[A, R any](name string, live bool, d batchDecl) (*batchForm, error) {
	fn, ok := d.fn.(func(context.Context, []A) ([]R, error))
	switch {
	case !live:
		return nil, fmt.Errorf("command %q: WithBatch on a command that is not live: only live queries re-run", name)
	case !ok:
		return nil, fmt.Errorf("command %q: WithBatch with a %T, want a func(context.Context, []%v) ([]%v, error)",
			name, d.fn, reflect.TypeFor[A](), reflect.TypeFor[R]())
	case d.nilFn:
		return nil, fmt.Errorf("command %q: WithBatch with a nil function", name)
	}
	return &batchForm{
		call: func(ctx context.Context, args any) (any, error) {
			res, err := fn(ctx, args.([]A))
			return res, err
		},
		args: func(qs []*query) any {
			as := make([]A, len(qs))
			for i, q := range qs {
				as[i] = q.args.(A)
			}
			return as
		},
		count: func(res any) (int, bool) {
			rs, ok := res.([]R)
			return len(rs), ok
		},
		item: func(res any, i int) any { return res.([]R)[i] },
	}, nil
}

// rawArray is the JSON array of the queries' canonical arguments.
func rawArray(qs []*query) []byte {
	n := 2
	for _, q := range qs {
		n += len(q.raw) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, q := range qs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, q.raw...)
	}
	return append(b, ']')
}

// rerunBatch runs the job's queries, all of one command, with one call of
// the command's batch form.
func (r *liveRegistry) rerunBatch(j *job) {
	rc, n := j.rcs[0], len(j.qs)
	c := j.qs[0].key.cmd
	rc.begin(time.Now(), r.a.cfg.rerunTimeout)
	rc.rec.forBatch(n)
	call := j.call(0, r.freshCalls)
	*call = middleware.Call{Command: c.name, Args: c.batch.args(j.qs), RawArgs: rawArray(j.qs), Origin: middleware.Live, Batch: n}
	var ctx context.Context = rc // it carries origin Live
	if r.a.cfg.observer != nil {
		var causes *rerunCauses
		for _, c := range j.causes {
			causes = mergeCauses(causes, c)
		}
		var ro rerunObservation
		ctx, ro = r.observeRerun(rc, c.name, causes, n)
		j.obs = append(j.obs, ro)
	}
	var res any
	var err error
	granted := r.grantedBatch(j, rc)
	refused, mixed := granted == 0, granted > 0 && granted < n
	if refused {
		err = errRerunNotGranted
	} else if !mixed {
		res, err = c.batchHandler(ctx, call)
	}
	rc.rec.close()
	now, ended := rc.end()
	if r.a.cfg.observer != nil {
		j.obs[len(j.obs)-1].ran(now)
	}
	if ended == context.DeadlineExceeded {
		for i := range j.late {
			j.late[i] = true
		}
		r.logLate(j, 0)
		return
	}
	if mixed {
		// The grant allows some of the queries and not the others: each
		// re-runs alone, with its own values, asked for its own grant.
		j.fallback = true
		return
	}
	errs, whole := batchOutcome(c, res, err, n)
	if refused {
		for i := range j.qs {
			j.outs[i] = r.resultOf(c, nil, false, err, j.prev[i])
			j.encodeResult(i, c, nil, false)
		}
		return
	}
	if whole != nil && ended == nil {
		r.a.logger.Warn("adapter: batched live re-run failed; its argument sets re-run one by one",
			"command", c.name, "argument_sets", n, "error", whole)
		j.fallback = true
		return
	}
	for i, q := range j.qs {
		reads := rc.rec.readSet(i, c.reads, j.prev[i])
		var item any
		switch {
		case whole != nil:
			j.outs[i] = r.resultOf(c, nil, false, whole, reads)
		case errs != nil && errs[i] != nil:
			j.outs[i] = r.resultOf(c, nil, false, errs[i], reads)
		default:
			item = c.batch.item(res, i)
			j.outs[i] = r.resultOf(c, item, false, nil, reads)
		}
		j.encodeResult(i, c, item, false)
		if j.outs[i].err != nil {
			r.logRerunError(q, j.outs[i].err)
		}
	}
}

// grantedBatch counts the queries of the batch j whose re-run the grant
// allows (grantedRerun), each asked with the values of the request that
// made it: queries of one scope may have been made by requests the grant
// tells apart. rc, the batch's context, carries the first's.
func (r *liveRegistry) grantedBatch(j *job, rc *runContext) (n int) {
	for i, q := range j.qs {
		var values context.Context = rc
		if i > 0 {
			values = r.valuesOf(q)
		}
		if q.values == nil || r.a.granted(values, q.key.cmd.name) {
			n++
		}
	}
	return n
}

// batchOutcome sorts what a call of c's batch form for n argument sets
// returned: the errors of those that failed (nil when none did), or why
// the call failed as a whole.
func batchOutcome(c *command, res any, err error, n int) (errs BatchErrors, whole error) {
	if err != nil && !errors.As(err, &errs) {
		return nil, err
	}
	if errs != nil && len(errs) != n {
		return nil, fmt.Errorf("the batch function of %s returned %d errors for %d argument sets", c.name, len(errs), n)
	}
	if got, ok := c.batch.count(res); !ok || got != n {
		return nil, fmt.Errorf("the batch function of %s returned %d results for %d argument sets", c.name, got, n)
	}
	return errs, nil
}

// chainBatch puts c's batch form, if it has one, behind the middleware
// chain.
func (a *Adapter) chainBatch(c *command) {
	if c.batch != nil {
		c.batchHandler = a.chain(func(ctx context.Context, call *middleware.Call) (any, error) {
			c.runs[causeRerun].Add(1)
			return c.batch.call(ctx, call.Args)
		})
	}
}
