package pgfeed

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Install prepares the database for the feed's source, for the tables of
// WithTables: for Notify, the triggers of InstallTriggers on the feed's
// channel; for WAL, the publication the feed reads (WithPublication),
// created, or changed to hold exactly these tables, and to publish every
// kind of write. Run it at every start, before Run: installing is
// idempotent, and safe when instances start together. With a pgx Conn,
// Pool or Tx as db it all happens in one transaction.
//
// A table in a publication must say which row an UPDATE or DELETE
// changed, or PostgreSQL refuses those writes to it: it needs a primary
// key, or a replica identity of its own (ALTER TABLE … REPLICA IDENTITY
// FULL, or USING INDEX). Install refuses, naming it, a table that has
// neither, rather than break its writes. A DELETE names its row in the
// keys only when the IDColumn is part of that identity (the primary key,
// typically); otherwise it gives the table's key.
//
// Creating a publication needs the CREATE privilege on the database and
// ownership of the tables; changing it, ownership of the publication.
// Where the application's role has neither, a database owner can run the
// statements once (docs/many-instances.md has them) and Install then finds
// nothing to do.
func (f *Feed) Install(ctx context.Context, db Execer) error {
	if f.cfgErr != nil {
		return f.cfgErr
	}
	if len(f.cfg.tables) == 0 {
		return errors.New("pgfeed: install: no tables to install for (WithTables)")
	}
	if f.cfg.source == WAL {
		return installPublication(ctx, db, f.cfg.publication, f.cfg.tables)
	}
	return InstallTriggers(ctx, db, f.cfg.channel, f.cfg.tables...)
}

// installPublication creates or updates the publication name for tables,
// in one string of statements, which Exec runs in one implicit
// transaction, under the install lock.
func installPublication(ctx context.Context, db Execer, name string, tables []TableSpec) error {
	var sql strings.Builder
	fmt.Fprintf(&sql, "SELECT pg_advisory_xact_lock(%d);\n", installLock)
	var idents, oids []string
	seen := make(map[string]bool)
	for _, t := range tables {
		ident := t.ident()
		if seen[ident] {
			continue
		}
		seen[ident] = true
		if t.IDColumn != "" {
			// Fails, naming the column, when the table has no such column.
			fmt.Fprintf(&sql, "SELECT (NULL::%s).%s;\n", ident, pgx.Identifier{t.IDColumn}.Sanitize())
		}
		idents = append(idents, ident)
		oids = append(oids, literal(ident)+"::regclass")
	}
	body := fmt.Sprintf(`
DECLARE
	t   regclass;
	pub pg_publication;
BEGIN
	FOREACH t IN ARRAY ARRAY[%[1]s] LOOP
		IF (SELECT relreplident = 'n' OR relreplident = 'd' AND NOT EXISTS (
				SELECT FROM pg_index WHERE indrelid = t AND indisprimary)
			FROM pg_class WHERE oid = t) THEN
			RAISE EXCEPTION 'table %% has neither a primary key nor a replica identity: once published, every UPDATE and DELETE on it would fail', t
				USING HINT = 'Give it a primary key, or ALTER TABLE ... REPLICA IDENTITY FULL.';
		END IF;
	END LOOP;
	SELECT * INTO pub FROM pg_publication WHERE pubname = %[2]s;
	IF NOT FOUND THEN
		CREATE PUBLICATION %[3]s FOR TABLE %[4]s;
		RETURN;
	END IF;
	IF NOT pub.puballtables AND (
		SELECT coalesce(array_agg(prrelid ORDER BY prrelid), '{}') FROM pg_publication_rel WHERE prpubid = pub.oid
	) IS DISTINCT FROM (SELECT array_agg(o ORDER BY o) FROM unnest(ARRAY[%[1]s]::oid[]) AS o) THEN
		ALTER PUBLICATION %[3]s SET TABLE %[4]s;
	END IF;
	IF NOT (pub.pubinsert AND pub.pubupdate AND pub.pubdelete AND pub.pubtruncate) THEN
		ALTER PUBLICATION %[3]s SET (publish = 'insert, update, delete, truncate');
	END IF;
END`, strings.Join(oids, ", "), literal(name), pgx.Identifier{name}.Sanitize(), strings.Join(idents, ", "))
	tag := "$pgfeed$"
	for i := 0; strings.Contains(body, tag); i++ {
		tag = fmt.Sprintf("$pgfeed%d$", i) // a table name holding the tag would end the body early
	}
	fmt.Fprintf(&sql, "DO %s%s%s;\n", tag, body, tag)
	if _, err := db.Exec(ctx, sql.String()); err != nil {
		return fmt.Errorf("pgfeed: install publication %s: %w", name, err)
	}
	return nil
}
