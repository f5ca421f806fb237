package adapter

import (
	"fmt"
	"testing"
)

// The run queue gives commands turns, the one waiting longest first, a
// chunk of queries a turn, and keeps each command's queries in the order
// they were queued.
func TestRunQueueTurns(t *testing.T) {
	a, b := &command{name: "a"}, &command{name: "b"}
	var rq runQueue
	for i := range 5 {
		rq.push(&query{key: queryKey{cmd: a, args: fmt.Sprint(i)}})
	}
	for i := range 2 {
		rq.push(&query{key: queryKey{cmd: b, args: fmt.Sprint(i)}})
	}
	var got []string
	for {
		qs, batched := rq.take(nil, 2, maxBatch)
		if len(qs) == 0 {
			break
		}
		if batched {
			t.Fatal("a command without a batch form was taken as a batch")
		}
		turn := ""
		for _, q := range qs {
			turn += q.key.cmd.name + q.key.args
		}
		got = append(got, turn)
	}
	want := []string{"a0a1", "b0b1", "a2a3", "a4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("turns %v, want %v", got, want)
	}
	if rq.n != 0 || len(rq.turns) != 0 {
		t.Fatalf("after the last take: %d waiting, turns %v", rq.n, rq.turns)
	}
}

// Once its arrays have grown, the run queue takes and queues without
// allocating: a round of re-runs goes through it a chunk at a time.
func TestRunQueueTakesWithoutAllocating(t *testing.T) {
	cmds := []*command{{name: "a"}, {name: "b"}, {name: "c"}}
	var qs []*query
	for i := range 48 {
		qs = append(qs, &query{key: queryKey{cmd: cmds[i%len(cmds)]}})
	}
	var rq runQueue
	buf := make([]*query, 0, maxChunk)
	round := func() {
		for _, q := range qs {
			rq.push(q)
		}
		for {
			if buf, _ = rq.take(buf[:0], 4, maxBatch); len(buf) == 0 {
				return
			}
		}
	}
	round() // grows the arrays
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Fatalf("a round through the run queue allocated %v times", n)
	}
}
