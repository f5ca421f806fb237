//go:build !unix

package pgtest

import "os/exec"

// owner is unused where there is no root to step down from.
type owner struct{}

func serverOwner() (*owner, error) { return nil, nil }

func runAs(*exec.Cmd, *owner) {}

func chown(string, *owner) error { return nil }
