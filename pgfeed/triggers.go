package pgfeed

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A TableSpec names a table whose writes InstallTriggers makes the feeds
// hear.
type TableSpec struct {
	// Schema is the table's schema; "" finds the table through the
	// search_path.
	Schema string
	// Table is the table's name, exactly as stored (no quoting, case kept).
	Table string
	// IDColumn is the column whose value names a row in keys
	// ("customers/12"); "" sends the table key only. Its value is sent as
	// text, the way PostgreSQL prints it.
	IDColumn string
	// Key is the key the table's changes are reported under; "" means
	// Table. It must match what the live commands pass to adapter.Reads.
	Key string
}

func (t TableSpec) key() string {
	if t.Key != "" {
		return t.Key
	}
	return t.Table
}

func (t TableSpec) ident() string {
	if t.Schema != "" {
		return pgx.Identifier{t.Schema, t.Table}.Sanitize()
	}
	return pgx.Identifier{t.Table}.Sanitize()
}

// Execer runs SQL without results. *pgx.Conn, *pgxpool.Pool and pgx.Tx are
// Execers.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Names of what InstallTriggers creates. The trigger names are fixed per
// table, which is what makes installing twice replace rather than add.
const (
	triggerFunction = "mcplive_notify_change"
	rowTrigger      = "mcplive_notify"
	truncateTrigger = "mcplive_notify_truncate"
	// installLock serialises concurrent installs (several instances
	// starting at once), which CREATE OR REPLACE FUNCTION does not
	// tolerate. Its value is "mcplive" in ASCII.
	installLock = 0x6d63706c697665
)

// triggerFunctionSQL is the trigger function. Its arguments come from the
// CREATE TRIGGER: the channel, the table's key and the id column (empty for
// none). For a row it sends the row's key alone, both the old and the new
// one when an UPDATE changes the id: a row's key reaches the queries that
// read the row and those that read the table, where the table's key would
// reach every query that read any row of it. It sends the table's key for
// TRUNCATE, for a table without an id column and for a row whose id is
// NULL. The payload has the format Publish uses, with the instance id
// "sql", which no feed has, so every instance processes it. A payload over
// the NOTIFY limit (an enormous id) is cut down to the table key.
//
// to_jsonb(row) ->> column reads the id without knowing its type or
// building dynamic SQL. The function sets its own search_path: it runs
// with the privileges of whoever writes, and with the writer's path a
// schema listed before pg_catalog could put its own pg_notify or to_jsonb
// in the place of the built-ins.
var triggerFunctionSQL = `
CREATE OR REPLACE FUNCTION ` + triggerFunction + `() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $pgfeed$
DECLARE
	channel   text := TG_ARGV[0];
	table_key text := TG_ARGV[1];
	id_column text := TG_ARGV[2];
	keys      text[] := ARRAY[]::text[];
	row_key   text;
	payload   text;
BEGIN
	IF TG_LEVEL = 'ROW' AND id_column <> '' THEN
		IF TG_OP IN ('UPDATE', 'DELETE') THEN
			row_key := table_key || '/' || (to_jsonb(OLD) ->> id_column);
			IF row_key IS NOT NULL THEN
				keys := keys || row_key;
			END IF;
		END IF;
		IF TG_OP IN ('INSERT', 'UPDATE') THEN
			row_key := table_key || '/' || (to_jsonb(NEW) ->> id_column);
			IF row_key IS NOT NULL AND NOT row_key = ANY (keys) THEN
				keys := keys || row_key;
			END IF;
		END IF;
	END IF;
	IF cardinality(keys) = 0 THEN
		keys := ARRAY[table_key];
	END IF;
	payload := json_build_object('i', '` + sqlInstance + `', 'k', keys)::text;
	IF octet_length(payload) > ` + fmt.Sprint(maxPayload) + ` THEN
		payload := json_build_object('i', '` + sqlInstance + `', 'k', ARRAY[table_key])::text;
	END IF;
	PERFORM pg_notify(channel, payload);
	RETURN NULL;
END
$pgfeed$`

// InstallTriggers makes every write to the given tables notify channel
// ("" for DefaultChannel), so that the feeds of all instances hear writes
// made by psql, migrations, or other services, not only those reported
// through the adapter. A row written to a table with an IDColumn is
// reported by its key alone, "<key>/<id>", which re-runs the queries that
// read that row and those that read the whole table, as the adapter's
// Changed does; other writes by the table's key. Feed.Install calls it for
// a NOTIFY feed.
//
// It creates (or replaces) the trigger function mcplive_notify_change in
// the first schema of the search_path, and on each table an AFTER INSERT OR
// UPDATE OR DELETE row trigger named mcplive_notify and an AFTER TRUNCATE
// statement trigger named mcplive_notify_truncate. Installing again, with
// the same or other settings, replaces them: run it at every start (a table
// left out of a later call keeps its triggers until dropped by hand). With
// a pgx Conn, Pool or Tx as db it all happens in one transaction, so either
// every table gets its triggers or none does. It needs PostgreSQL 11 or
// later and the right to create triggers on the tables.
//
// A row trigger sends one notification per row: a statement that writes a
// million rows sends a million notifications, which every instance then
// reads. Tables written in bulk may be better served by a statement of their
// own that calls pg_notify once (with the payload format of the package
// documentation).
//
// With the triggers installed, a write made through the adapter is heard
// twice: the trigger's notification reaches every instance, the writer
// included, on top of the writer's own Changed and its Publish. The extra
// re-runs find the same result and notify no client, so this costs queries,
// not messages.
func InstallTriggers(ctx context.Context, db Execer, channel string, tables ...TableSpec) error {
	if channel == "" {
		channel = DefaultChannel
	}
	if err := validChannel(channel); err != nil {
		return fmt.Errorf("pgfeed: install triggers: %w", err)
	}
	var sql strings.Builder
	// Exec without arguments uses the simple protocol, which runs all
	// statements of one string in one implicit transaction.
	fmt.Fprintf(&sql, "SELECT pg_advisory_xact_lock(%d);\n%s;\n", installLock, triggerFunctionSQL)
	for _, t := range tables {
		if err := t.validate(); err != nil {
			return fmt.Errorf("pgfeed: install triggers: %w", err)
		}
		table := t.ident()
		if t.IDColumn != "" {
			// Fails, naming the column, when the table has no such column:
			// the trigger would otherwise send table keys only, silently.
			fmt.Fprintf(&sql, "SELECT (NULL::%s).%s;\n", table, pgx.Identifier{t.IDColumn}.Sanitize())
		}
		fmt.Fprintf(&sql, "DROP TRIGGER IF EXISTS %s ON %s;\n", rowTrigger, table)
		fmt.Fprintf(&sql, "CREATE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %s(%s, %s, %s);\n",
			rowTrigger, table, triggerFunction, literal(channel), literal(t.key()), literal(t.IDColumn))
		fmt.Fprintf(&sql, "DROP TRIGGER IF EXISTS %s ON %s;\n", truncateTrigger, table)
		fmt.Fprintf(&sql, "CREATE TRIGGER %s AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s(%s, %s, '');\n",
			truncateTrigger, table, triggerFunction, literal(channel), literal(t.key()))
	}
	if _, err := db.Exec(ctx, sql.String()); err != nil {
		return fmt.Errorf("pgfeed: install triggers: %w", err)
	}
	return nil
}

func (t TableSpec) validate() error {
	if t.Table == "" {
		return errors.New("a TableSpec without a Table")
	}
	for _, s := range []string{t.Schema, t.Table, t.IDColumn, t.Key} {
		if strings.ContainsRune(s, 0) {
			return fmt.Errorf("table %q: a name contains a NUL byte", t.Table)
		}
	}
	if strings.Contains(t.Key, "/") || (t.Key == "" && strings.Contains(t.Table, "/")) {
		return fmt.Errorf("table %q: key %q contains '/', which separates a table from a row id", t.Table, t.key())
	}
	// The trigger's smallest payload carries the table key alone; if even
	// that does not fit, pg_notify fails, and with it every write to the
	// table. PostgreSQL's JSON is at most a few bytes longer than Go's,
	// which maxPayload's room covers.
	if n := len(marshal(sqlInstance, []string{t.key()})); n > maxPayload {
		return fmt.Errorf("table %q: key of %d bytes is too long for a notification", t.Table, len(t.key()))
	}
	return nil
}

// literal quotes s as an escape string constant (E'…'), whose meaning does
// not depend on the server's standard_conforming_strings setting. Trigger
// arguments must be constants: they cannot be bound as parameters.
func literal(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `'`, `''`)
	return "E'" + s + "'"
}
