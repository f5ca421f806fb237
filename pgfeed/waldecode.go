package pgfeed

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
)

// walDecoder turns the pgoutput messages of a replication stream into the
// keys each committed transaction changed. pgoutput sends a transaction
// whole, at its commit, framed by Begin and Commit, transactions in commit
// order, and never one that rolled back; before the first change of a table
// on a connection it describes the table (Relation), which names its
// columns.
//
// A row's key is its table's key, a slash and the row's IDColumn value as
// PostgreSQL prints it ("customers/12"), as the triggers send it; an UPDATE
// that changes the id gives both rows' keys. The table's key stands alone
// for TRUNCATE, for a table without an IDColumn, for a row whose id is not
// in the message (NULL, or a DELETE on a table whose replica identity does
// not hold the IDColumn), and for the whole transaction's rows of a table
// once the transaction has more keys than the limit.
//
// A decoder serves one connection: relations are described again on the
// next.
type walDecoder struct {
	channel  string // the prefix of the messages Publish writes
	instance string // this feed's id: its own messages are skipped
	limit    int    // keys per transaction before they collapse into tables
	tables   []TableSpec

	relations map[uint32]walRelation

	// The transaction being received.
	open      bool
	xid       uint32
	keys      map[string]struct{}
	collapsed bool // the keys are table keys only
	all       bool // anything may have changed
	problem   error
}

// walRelation is what the decoder knows of a table: its key, and where the
// id column is among its columns (-1: the table has none).
type walRelation struct {
	key string
	id  int
}

// A walDelivery is what one message of the stream asks of the sink, once
// a transaction is complete or a message outside one arrives.
type walDelivery struct {
	keys []string // sorted, without duplicates
	all  bool     // ChangedAll instead
	// end is the position to confirm once delivered (0: none), and
	// commit when the transaction committed, by the server's clock.
	end    pglogrepl.LSN
	commit time.Time
	// xid is the transaction's id; 0 for a message outside one.
	xid uint32
	// problem is why a transaction was widened to everything, to log.
	problem error
}

// empty reports whether d asks nothing of the sink.
func (d walDelivery) empty() bool { return !d.all && len(d.keys) == 0 }

func newWALDecoder(cfg config) *walDecoder {
	return &walDecoder{
		channel:   cfg.channel,
		instance:  cfg.instance,
		limit:     cfg.txnKeyLimit,
		tables:    cfg.tables,
		relations: make(map[uint32]walRelation),
	}
}

// decode takes one message of the stream and returns what to deliver, if
// anything (ok false: nothing yet).
func (d *walDecoder) decode(data []byte) (walDelivery, bool, error) {
	msg, err := parseWAL(data)
	if errors.Is(err, errUnknownMessage) {
		// A kind of message this decoder does not know (a server newer
		// than it?): what it changed cannot be named, but the stream
		// can go on.
		if d.open {
			d.all = true
			if d.problem == nil {
				d.problem = err
			}
		}
		return walDelivery{}, false, nil
	}
	if err != nil {
		return walDelivery{}, false, err
	}
	return d.handle(msg)
}

// handle is decode of a parsed message.
func (d *walDecoder) handle(msg pglogrepl.Message) (walDelivery, bool, error) {
	switch msg.(type) {
	case *pglogrepl.InsertMessage, *pglogrepl.UpdateMessage, *pglogrepl.DeleteMessage, *pglogrepl.TruncateMessage:
		if !d.open {
			return walDelivery{}, false, fmt.Errorf("pgfeed: a change (%s) outside a transaction", msg.Type())
		}
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		d.relations[m.RelationID] = d.relation(m)
	case *pglogrepl.BeginMessage:
		d.open, d.keys, d.collapsed, d.all, d.problem = true, make(map[string]struct{}), false, false, nil
		d.xid = m.Xid
	case *pglogrepl.InsertMessage:
		d.row(m.RelationID, m.Tuple)
	case *pglogrepl.UpdateMessage:
		d.row(m.RelationID, m.NewTuple)
		if m.OldTuple != nil {
			d.row(m.RelationID, m.OldTuple)
		}
	case *pglogrepl.DeleteMessage:
		d.row(m.RelationID, m.OldTuple)
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if rel, ok := d.known(id); ok {
				d.add(rel.key)
			}
		}
	case *pglogrepl.LogicalDecodingMessage:
		return d.message(m)
	case *pglogrepl.CommitMessage:
		if !d.open {
			return walDelivery{}, false, fmt.Errorf("pgfeed: a commit at %s outside a transaction", m.CommitLSN)
		}
		out := walDelivery{all: d.all, end: m.TransactionEndLSN, commit: m.CommitTime, xid: d.xid, problem: d.problem}
		if !d.all {
			out.keys = slices.Sorted(maps.Keys(d.keys))
		}
		d.open, d.keys = false, nil
		return out, true, nil
	}
	// Type and Origin messages name nothing a key needs.
	return walDelivery{}, false, nil
}

// relation looks up the TableSpec of a table the stream describes: the
// one with its schema and name, or else one with its name and no schema
// (found through the search_path when it was installed).
func (d *walDecoder) relation(m *pglogrepl.RelationMessage) walRelation {
	var spec *TableSpec
	for i := range d.tables {
		t := &d.tables[i]
		if t.Table != m.RelationName {
			continue
		}
		if t.Schema == m.Namespace {
			spec = t
			break
		}
		if t.Schema == "" && spec == nil {
			spec = t
		}
	}
	if spec == nil {
		// A table of the publication that no TableSpec names (someone
		// added it): its changes go out under its name, table keys only.
		return walRelation{key: m.RelationName, id: -1}
	}
	rel := walRelation{key: spec.key(), id: -1}
	if spec.IDColumn != "" {
		rel.id = slices.IndexFunc(m.Columns, func(c *pglogrepl.RelationMessageColumn) bool { return c.Name == spec.IDColumn })
	}
	return rel
}

func (d *walDecoder) known(id uint32) (walRelation, bool) {
	rel, ok := d.relations[id]
	if !ok && d.problem == nil {
		// pgoutput describes every table before its first change on a
		// connection; a change of an unknown one cannot be named.
		d.problem = fmt.Errorf("a change of table %d, which the stream never described", id)
		d.all = true
	}
	return rel, ok
}

// row adds the key of one row of a table: the row's when the tuple holds
// its id as text, the table's otherwise.
func (d *walDecoder) row(relation uint32, tuple *pglogrepl.TupleData) {
	rel, ok := d.known(relation)
	if !ok {
		return
	}
	if rel.id >= 0 && tuple != nil && rel.id < len(tuple.Columns) {
		if c := tuple.Columns[rel.id]; c.DataType == pglogrepl.TupleDataTypeText {
			d.add(rel.key + "/" + string(c.Data))
			return
		}
	}
	d.add(rel.key)
}

// add adds key to the transaction's keys, collapsing them into table keys
// once there are more than the limit.
func (d *walDecoder) add(key string) {
	if d.all {
		return
	}
	if d.collapsed {
		key = wider(key)
	}
	d.keys[key] = struct{}{}
	if len(d.keys) > d.limit && !d.collapsed {
		wide := make(map[string]struct{})
		for k := range d.keys {
			wide[wider(k)] = struct{}{}
		}
		d.keys, d.collapsed = wide, true
	}
}

// message reads a message written with pg_logical_emit_message under the
// feed's prefix, as Publish writes them: the payload of the package
// documentation. A transactional one is part of its transaction; one
// written outside a transaction is delivered at once.
func (d *walDecoder) message(m *pglogrepl.LogicalDecodingMessage) (walDelivery, bool, error) {
	if m.Prefix != d.channel {
		return walDelivery{}, false, nil
	}
	var p payload
	var all bool
	var err error
	if len(m.Content) > maxMessage {
		all, err = true, fmt.Errorf("a message of %d bytes, more than the %d a feed reads", len(m.Content), maxMessage)
	} else {
		p, all, err = decodePayload(string(m.Content))
	}
	if !all && p.Instance == d.instance {
		return walDelivery{}, false, nil // published by this instance: handled before publishing
	}
	if d.open {
		if all {
			d.all = true
			if d.problem == nil {
				d.problem = err
			}
		}
		for _, k := range p.Keys {
			if k != "" {
				d.add(k)
			}
		}
		return walDelivery{}, false, nil
	}
	out := walDelivery{all: all, problem: err}
	if !all {
		out.keys = slices.Sorted(maps.Keys(keySet(p.Keys)))
	}
	return out, !out.empty(), nil
}

func keySet(keys []string) map[string]struct{} {
	set := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if k != "" {
			set[k] = struct{}{}
		}
	}
	return set
}

// errUnknownMessage is the error of parseWAL for a kind of message it does
// not know.
var errUnknownMessage = errors.New("pgfeed: a kind of replication message this feed does not know")

// knownMessages are the kinds of pgoutput message that protocol version 1
// with messages sends: Begin, Commit, Origin, Relation, Type, Insert,
// Update, Delete, Truncate and Message.
const knownMessages = "BCORYIUDTM"

// parseWAL parses one pgoutput message. pglogrepl reads the server's
// bytes without checking their lengths; a message cut short (a broken
// proxy, a server bug) would panic in the middle of Run and end the
// process, where an error makes Run reconnect.
func parseWAL(data []byte) (msg pglogrepl.Message, err error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("pgfeed: an empty replication message")
	}
	if !strings.ContainsRune(knownMessages, rune(data[0])) {
		return nil, fmt.Errorf("%w: type %q", errUnknownMessage, data[0])
	}
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, fmt.Errorf("pgfeed: a malformed replication message of type %q (%d bytes): %v", data[0], len(data), r)
		}
	}()
	msg, err = pglogrepl.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("pgfeed: replication message of type %q: %w", data[0], err)
	}
	return msg, nil
}
