package adapter

// runQueue holds the queries waiting for a worker, grouped by command, so
// that a worker can take several queries of a command with a batch form
// (WithBatch) at once. Commands take turns, the one waiting longest first;
// the queries of a command run in the order they were queued. It is
// guarded by the registry's mutex.
type runQueue struct {
	// turns are the commands with queries waiting, each once, in turn.
	turns []*command
	// byCmd keeps each command's queue, emptied or not, so that its array
	// serves the next burst.
	byCmd map[*command]*cmdQueue
	n     int // queries waiting
}

type cmdQueue struct {
	qs     []*query // waiting from head on
	head   int
	inTurn bool // in turns
}

// push queues q, which is not queued.
func (rq *runQueue) push(q *query) {
	c := q.key.cmd
	cq := rq.byCmd[c]
	if cq == nil {
		if rq.byCmd == nil {
			rq.byCmd = make(map[*command]*cmdQueue)
		}
		cq = &cmdQueue{}
		rq.byCmd[c] = cq
	}
	cq.qs = append(cq.qs, q)
	rq.n++
	if !cq.inTurn {
		cq.inTurn = true
		rq.turns = append(rq.turns, c)
	}
}

// take takes the next queries to run and appends them to dst: from the
// command whose turn it is, its first waiting query and, when the command
// has a batch form and that query may run in a batch (not solo), the
// queries waiting behind it that may too, up to batch in all; without a
// batch form (or solo), up to chunk queries, each to run alone. Queries
// dropped while they waited are left idle and skipped. It returns dst
// unchanged when nothing is waiting; batched reports a batch.
func (rq *runQueue) take(dst []*query, chunk, batch int) (_ []*query, batched bool) {
	for len(rq.turns) > 0 && len(dst) == 0 {
		// The others move up a place, in the turns' own array: slicing
		// the first off and appending it back would walk the array to
		// its end and allocate a new one, every few takes.
		c := rq.turns[0]
		n := copy(rq.turns, rq.turns[1:])
		cq := rq.byCmd[c]
		for cq.head < len(cq.qs) {
			q := cq.qs[cq.head]
			if q.dropped {
				rq.pop(cq)
				q.state = runIdle
				continue
			}
			if len(dst) == 0 {
				batched = c.batch != nil && !q.solo
			}
			if batched && (q.solo || len(dst) == batch) ||
				!batched && (len(dst) == chunk || c.batch != nil && !q.solo) {
				break
			}
			rq.pop(cq)
			dst = append(dst, q)
		}
		if cq.head < len(cq.qs) {
			rq.turns[n] = c // its next turn, last
		} else {
			rq.turns[n] = nil
			rq.turns = rq.turns[:n]
			cq.inTurn = false
		}
	}
	return dst, batched && len(dst) > 1
}

// pop removes the query at the head of cq.
func (rq *runQueue) pop(cq *cmdQueue) {
	cq.qs[cq.head] = nil
	cq.head++
	rq.n--
	if cq.head == len(cq.qs) {
		cq.qs, cq.head = cq.qs[:0], 0
	}
}

// drain empties the queue, leaving every query in it idle (Close).
func (rq *runQueue) drain() {
	for _, cq := range rq.byCmd {
		for _, q := range cq.qs[cq.head:] {
			q.state = runIdle
		}
		clear(cq.qs)
		cq.qs, cq.head, cq.inTurn = cq.qs[:0], 0, false
	}
	rq.turns, rq.n = nil, 0
}
