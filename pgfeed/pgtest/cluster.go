package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// startAttempts bounds the retries when the free port we picked was
	// taken by someone else before the server bound it.
	startAttempts = 3
	// commandTimeout bounds each initdb and pg_ctl run.
	commandTimeout = 2 * time.Minute
	// readyTimeout bounds the wait for the server to accept connections.
	readyTimeout = 30 * time.Second
	// readyPoll is how often a connection is attempted while waiting.
	readyPoll = 50 * time.Millisecond
)

// cluster is one running throwaway server.
type cluster struct {
	bins  binaries
	owner *owner
	dir   string // temporary root: data/, server.log and the Unix socket
	data  string
	port  int
}

// startCluster creates a cluster in a new temporary directory and starts it
// on a free loopback port. On failure it leaves nothing behind.
func startCluster(bins binaries) (c *cluster, err error) {
	o, err := serverOwner()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: its parent is private to the current user, and the
	// server may run as another one.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c = &cluster{bins: bins, owner: o, dir: dir, data: filepath.Join(dir, "data")}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := chown(dir, o); err != nil {
		return nil, fmt.Errorf("chown %s: %w", dir, err)
	}
	if err := c.initdb(); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		err = c.start()
		if err == nil {
			break
		}
		if attempt == startAttempts {
			return nil, err
		}
	}
	if err := c.waitReady(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) initdb() error {
	// --no-sync and fsync=off: the data is thrown away, durability buys
	// nothing and costs seconds. Trust authentication is safe because the
	// server listens on loopback and a private socket directory only.
	// wal_level=logical, and slots and senders for many feeds at once:
	// pgfeed's WAL source reads the log through logical replication.
	if _, err := c.run(c.bins.initdb, "-D", c.data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	conf := fmt.Sprintf(`
# pgtest: a throwaway server for tests
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
wal_level = logical
max_replication_slots = 40
max_wal_senders = 40
`, c.dir)
	f, err := os.OpenFile(filepath.Join(c.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(conf); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// start picks a free port and starts the server on it. The port can be taken
// between our probe and the server's bind; pg_ctl -w then reports the failed
// start and the caller retries with another port.
func (c *cluster) start() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.port = port
	logFile := filepath.Join(c.dir, "server.log")
	if _, err := c.run(c.bins.pgCtl, "start", "-D", c.data, "-l", logFile, "-w", "-t", "60",
		"-o", "-p "+strconv.Itoa(port)); err != nil {
		return fmt.Errorf("%w\nserver log:\n%s", err, tail(logFile))
	}
	return nil
}

// waitReady connects until the server answers, and checks that the server
// answering on the port is ours and not one that grabbed the port first.
func (c *cluster) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		dataDir, err := c.dataDirectory(ctx)
		if err == nil {
			if !sameDir(dataDir, c.data) {
				return fmt.Errorf("port %d answers with data directory %s, not ours (%s)", c.port, dataDir, c.data)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server on port %d not ready after %v: %w", c.port, readyTimeout, err)
		case <-tick.C:
		}
	}
}

func (c *cluster) dataDirectory(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, c.connString("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var dir string
	err = conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir)
	return dir, err
}

// stop kills the server without a checkpoint (its data is discarded) and
// removes its directory.
func (c *cluster) stop() error {
	_, err := c.run(c.bins.pgCtl, "stop", "-D", c.data, "-m", "immediate", "-w")
	if rmErr := os.RemoveAll(c.dir); err == nil {
		err = rmErr
	}
	return err
}

// connString addresses database db over TCP, as an application would.
func (c *cluster) connString(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// run runs a PostgreSQL program as the server's owner, with a small fixed
// environment: PG* variables of the caller (PGPORT, PGDATA…) must not leak
// into the throwaway server.
func (c *cluster) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir // the caller's directory may be unreadable by the owner
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "LANG=C", "TZ=UTC"}
	// pg_ctl start leaves a daemon behind; should it ever hold our pipes,
	// WaitDelay stops us from waiting on it.
	cmd.WaitDelay = 5 * time.Second
	runAs(cmd, c.owner)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// freePort asks the kernel for a loopback port that is free right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sameDir compares directories through symlinks (/tmp may be one).
func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// tail returns the end of a log file for an error message.
func tail(path string) string {
	const keep = 4 << 10
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
