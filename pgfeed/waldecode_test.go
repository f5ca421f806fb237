package pgfeed

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

// The decoder's cases, on messages as pglogrepl parses them: what the
// sink gets for each transaction. TestWAL* in wal_test.go runs the same
// writes on a real server.

// Relations of the stream: 1 customers(id, name) keyed by id; 2 events(at)
// without an id column; 3 "Odd"."Line" keyed by "Item Id" under the key
// line_items; 4 a table no TableSpec names.
var decoderTables = []TableSpec{
	{Table: "customers", IDColumn: "id"},
	{Table: "events"},
	{Schema: "Odd", Table: "Line", IDColumn: "Item Id", Key: "line_items"},
	{Schema: "other", Table: "customers", IDColumn: "name", Key: "other_customers"},
}

func relations() []pglogrepl.Message {
	col := func(name string) *pglogrepl.RelationMessageColumn {
		return &pglogrepl.RelationMessageColumn{Name: name}
	}
	return []pglogrepl.Message{
		&pglogrepl.RelationMessage{RelationID: 1, Namespace: "public", RelationName: "customers", Columns: []*pglogrepl.RelationMessageColumn{col("id"), col("name")}},
		&pglogrepl.RelationMessage{RelationID: 2, Namespace: "public", RelationName: "events", Columns: []*pglogrepl.RelationMessageColumn{col("at")}},
		&pglogrepl.RelationMessage{RelationID: 3, Namespace: "Odd", RelationName: "Line", Columns: []*pglogrepl.RelationMessageColumn{col("qty"), col("Item Id")}},
		&pglogrepl.RelationMessage{RelationID: 4, Namespace: "public", RelationName: "stray", Columns: []*pglogrepl.RelationMessageColumn{col("id")}},
		&pglogrepl.RelationMessage{RelationID: 5, Namespace: "other", RelationName: "customers", Columns: []*pglogrepl.RelationMessageColumn{col("id"), col("name")}},
	}
}

// tuple builds a row: "" is NULL, "\x00" an unchanged TOASTed value,
// anything else text.
func tuple(values ...string) *pglogrepl.TupleData {
	t := &pglogrepl.TupleData{ColumnNum: uint16(len(values))}
	for _, v := range values {
		c := &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeText, Data: []byte(v)}
		switch v {
		case "":
			c = &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeNull}
		case "\x00":
			c = &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeToast}
		}
		t.Columns = append(t.Columns, c)
	}
	return t
}

func begin() pglogrepl.Message { return &pglogrepl.BeginMessage{} }

func commit(end uint64) pglogrepl.Message {
	return &pglogrepl.CommitMessage{TransactionEndLSN: pglogrepl.LSN(end), CommitTime: time.Unix(1, 0)}
}

func insert(rel uint32, values ...string) pglogrepl.Message {
	return &pglogrepl.InsertMessage{RelationID: rel, Tuple: tuple(values...)}
}

func update(rel uint32, old *pglogrepl.TupleData, values ...string) pglogrepl.Message {
	m := &pglogrepl.UpdateMessage{RelationID: rel, NewTuple: tuple(values...), OldTuple: old}
	if old != nil {
		m.OldTupleType = pglogrepl.UpdateMessageTupleTypeKey
	}
	return m
}

func del(rel uint32, old ...string) pglogrepl.Message {
	return &pglogrepl.DeleteMessage{RelationID: rel, OldTupleType: pglogrepl.DeleteMessageTupleTypeKey, OldTuple: tuple(old...)}
}

func message(transactional bool, prefix, content string) pglogrepl.Message {
	return &pglogrepl.LogicalDecodingMessage{Transactional: transactional, Prefix: prefix, Content: []byte(content)}
}

func TestWALDecoder(t *testing.T) {
	many := []pglogrepl.Message{begin()}
	for i := range 6 {
		many = append(many, insert(1, fmt.Sprint(i), "x"))
	}
	many = append(many, insert(3, "1", "a"), commit(10))

	for _, tc := range []struct {
		name string
		msgs []pglogrepl.Message
		want []string // one entry per delivery: its keys joined by spaces, or "ALL"
	}{
		{"insert", []pglogrepl.Message{begin(), insert(1, "12", "Ada"), commit(10)}, []string{"customers/12"}},
		{"one Changed per transaction, rows sorted and once",
			[]pglogrepl.Message{begin(), insert(1, "2", "b"), update(1, nil, "1", "a"), del(1, "2", ""), insert(3, "9", "a/b 'c'"), commit(10)},
			[]string{"customers/1 customers/2 line_items/a/b 'c'"}},
		{"transactions in the order they come",
			[]pglogrepl.Message{begin(), insert(1, "1", ""), commit(10), begin(), insert(1, "2", ""), commit(20)},
			[]string{"customers/1", "customers/2"}},
		{"an update that changes the key names both rows",
			[]pglogrepl.Message{begin(), update(1, tuple("1", ""), "2", "a"), commit(10)},
			[]string{"customers/1 customers/2"}},
		{"a delete names the row of its old key",
			[]pglogrepl.Message{begin(), del(1, "7", ""), commit(10)}, []string{"customers/7"}},
		{"no id column: the table",
			[]pglogrepl.Message{begin(), insert(2, "2026-01-01"), insert(2, "2026-01-02"), commit(10)}, []string{"events"}},
		{"a NULL id, or one the message leaves out: the table",
			[]pglogrepl.Message{begin(), insert(1, "", "x"), update(1, nil, "\x00", "y"), commit(10)}, []string{"customers"}},
		{"a delete whose old key lacks the id column: the table",
			[]pglogrepl.Message{begin(), del(5, "3", ""), commit(10)}, []string{"other_customers"}},
		{"truncate: the tables",
			[]pglogrepl.Message{begin(), &pglogrepl.TruncateMessage{RelationIDs: []uint32{1, 3}}, commit(10)}, []string{"customers line_items"}},
		{"a table no spec names: its name",
			[]pglogrepl.Message{begin(), insert(4, "1"), commit(10)}, []string{"stray"}},
		{"the schema tells same-named tables apart",
			[]pglogrepl.Message{begin(), insert(5, "1", "kurt"), commit(10)}, []string{"other_customers/kurt"}},
		{"past the limit, a transaction's rows become their tables", many, []string{"customers line_items"}},
		{"a change of a table never described: everything",
			[]pglogrepl.Message{begin(), insert(1, "1", ""), insert(99, "1"), commit(10)}, []string{"ALL"}},
		{"a transaction of nothing the feed reads: nothing",
			[]pglogrepl.Message{begin(), message(true, "elsewhere", "x"), commit(10)}, []string{""}},
		{"a message outside a transaction: at once",
			[]pglogrepl.Message{message(false, DefaultChannel, `{"i":"sql","k":["weather","weather"]}`)}, []string{"weather"}},
		{"a message in a transaction: with it",
			[]pglogrepl.Message{begin(), insert(1, "1", ""), message(true, DefaultChannel, `{"i":"b","k":["weather"]}`), commit(10)},
			[]string{"customers/1 weather"}},
		{"this instance's own message: skipped",
			[]pglogrepl.Message{message(false, DefaultChannel, `{"i":"me","k":["x"]}`), begin(), message(true, DefaultChannel, `{"i":"me","k":["y"]}`), commit(10)},
			[]string{""}},
		{"an empty message: everything, this instance too",
			[]pglogrepl.Message{message(false, DefaultChannel, ``), begin(), insert(1, "1", ""), message(true, DefaultChannel, ``), commit(10)},
			[]string{"ALL", "ALL"}},
		{"a message that is not ours to read: everything",
			[]pglogrepl.Message{message(false, DefaultChannel, `customers`)}, []string{"ALL"}},
		{"a message too long to read: everything",
			[]pglogrepl.Message{message(false, DefaultChannel, `{"k":["`+strings.Repeat("x", maxMessage)+`"]}`)}, []string{"ALL"}},
		{"another prefix's messages: not ours",
			[]pglogrepl.Message{message(false, "other", `{"k":["x"]}`)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.instance, cfg.tables, cfg.txnKeyLimit = "me", decoderTables, 5
			d := newWALDecoder(cfg)
			var got []string
			for _, m := range append(relations(), tc.msgs...) {
				out, ok, err := d.handle(m)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					continue
				}
				if out.all {
					got = append(got, "ALL")
				} else {
					got = append(got, strings.Join(out.keys, " "))
				}
				if _, isCommit := m.(*pglogrepl.CommitMessage); isCommit && (out.end == 0 || out.commit.IsZero()) {
					t.Errorf("a commit delivered without its position and time: %+v", out)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("delivered %q, want %q", got, tc.want)
			}
		})
	}
}

// A relation described again (ALTER TABLE on the server) is looked up
// again: a renamed id column stops naming rows.
func TestWALDecoderRelationChanges(t *testing.T) {
	cfg := defaultConfig()
	cfg.tables = decoderTables
	d := newWALDecoder(cfg)
	for _, m := range relations() {
		d.handle(m)
	}
	d.handle(&pglogrepl.RelationMessage{RelationID: 1, Namespace: "public", RelationName: "customers",
		Columns: []*pglogrepl.RelationMessageColumn{{Name: "customer_id"}, {Name: "name"}}})
	d.handle(begin())
	d.handle(insert(1, "1", "x"))
	out, ok, err := d.handle(commit(10))
	if err != nil || !ok || !slices.Equal(out.keys, []string{"customers"}) {
		t.Errorf("delivered %+v, %v, %v; want the table's key", out, ok, err)
	}
}

// What the server sends, cut short or unknown, makes an error or a
// re-run of everything, never a panic.
func TestWALDecoderBadBytes(t *testing.T) {
	cfg := defaultConfig()
	cfg.tables = decoderTables
	d := newWALDecoder(cfg)
	for _, m := range relations() {
		d.handle(m)
	}
	insertBytes := []byte{'I', 0, 0, 0, 1, 'N', 0, 2, 't', 0, 0, 0, 2, '1', '2', 'n'}
	if _, _, err := d.decode(insertBytes); err == nil {
		t.Fatal("an insert outside a transaction: no error")
	}
	d.handle(begin())
	if _, _, err := d.decode(insertBytes); err != nil {
		t.Fatalf("a well-formed insert: %v", err)
	}
	if out, ok, _ := d.handle(commit(10)); !ok || !slices.Equal(out.keys, []string{"customers/12"}) {
		t.Fatalf("a well-formed insert delivered %+v", out)
	}
	for _, data := range [][]byte{
		{},
		{'I'},
		insertBytes[:10],
		{'I', 0, 0, 0, 1, 'N', 0, 9, 't', 0, 0, 0, 200, 'x'},
		{'R', 0, 0},
		{'C', 0},
	} {
		if _, _, err := d.decode(data); err == nil {
			t.Errorf("decode(%q): no error", data)
		}
	}
	// An unknown kind in a transaction: it cannot be named, so the
	// transaction is everything.
	d.handle(begin())
	if _, _, err := d.decode([]byte{'Z', 1, 2}); err != nil {
		t.Fatalf("an unknown kind of message: %v", err)
	}
	if out, ok, _ := d.handle(commit(10)); !ok || !out.all {
		t.Errorf("the transaction delivered %+v, want everything", out)
	}
	if _, _, err := d.handle(commit(20)); err == nil {
		t.Error("a commit outside a transaction: no error")
	}
}

func TestSlotName(t *testing.T) {
	for instance, want := range map[string]string{
		"abc_123":                   "mcplive_abc_123",
		"Host-1":                    "mcplive_host_1_",
		strings.Repeat("a", 55):     "mcplive_" + strings.Repeat("a", 55),
		strings.Repeat("a", 56):     "mcplive_" + strings.Repeat("a", 32) + "_",
		"Σ":                         "mcplive___",
		"mcplive_changes's replica": "mcplive_mcplive_changes_s_replica_",
	} {
		got := slotName(instance)
		if !strings.HasPrefix(got, want) || len(got) > maxIdentifier || strings.ContainsFunc(got, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
		}) {
			t.Errorf("slotName(%q) = %q, want a valid slot name starting %q", instance, got, want)
		}
	}
	if slotName("Host-1") == slotName("host_1") || slotName("Host-1") == slotName("HOST-1") {
		t.Error("two instance ids share a slot")
	}
}
