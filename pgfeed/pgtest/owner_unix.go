//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// owner is the OS user the server runs as when the tests run as root.
type owner struct {
	uid, gid uint32
}

// serverOwner returns nil when the current user may run PostgreSQL itself,
// and the "postgres" user when the current user is root, which initdb and
// postgres refuse to run as.
func serverOwner() (*owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to: need an OS user %q to run it as (the Debian package creates it): %w", "postgres", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("uid of user postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("gid of user postgres: %w", err)
	}
	return &owner{uid: uint32(uid), gid: uint32(gid)}, nil
}

// runAs makes cmd run as o. Setting the credential directly avoids
// depending on runuser, su or sudo being installed.
func runAs(cmd *exec.Cmd, o *owner) {
	if o == nil {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: o.uid, Gid: o.gid},
	}
}

// chown gives dir to o so that the server can write its data and socket.
func chown(dir string, o *owner) error {
	if o == nil {
		return nil
	}
	return os.Chown(dir, int(o.uid), int(o.gid))
}
