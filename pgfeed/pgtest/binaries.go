package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// binaries are the PostgreSQL programs the helper runs.
type binaries struct {
	initdb string
	pgCtl  string
}

// debianBinGlob is where Debian and Ubuntu install the server programs, one
// directory per major version; they are not on PATH there.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// findBinaries looks for initdb and pg_ctl on PATH first (a source build or
// a distribution that puts them there), then in the Debian directories,
// newest version first.
func findBinaries() (binaries, bool) {
	initdb, err1 := exec.LookPath("initdb")
	pgCtl, err2 := exec.LookPath("pg_ctl")
	if err1 == nil && err2 == nil {
		return binaries{initdb: initdb, pgCtl: pgCtl}, true
	}
	dirs, _ := filepath.Glob(debianBinGlob)
	slices.SortFunc(dirs, func(a, b string) int {
		// Descending: the newest major version wins.
		return compareVersions(versionOf(b), versionOf(a))
	})
	for _, dir := range dirs {
		b := binaries{initdb: filepath.Join(dir, "initdb"), pgCtl: filepath.Join(dir, "pg_ctl")}
		if isExecutable(b.initdb) && isExecutable(b.pgCtl) {
			return b, true
		}
	}
	return binaries{}, false
}

// versionOf extracts "15" from /usr/lib/postgresql/15/bin.
func versionOf(binDir string) string {
	return filepath.Base(filepath.Dir(binDir))
}

// compareVersions orders dotted versions numerically ("9.6" < "10" < "15"),
// which a string comparison gets wrong.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
