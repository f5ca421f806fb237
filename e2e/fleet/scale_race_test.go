//go:build race

package fleet

// runScale under the race detector is the small one: the detector slows
// every goroutine of the test several times over, and of the instances too
// when they are built with GOFLAGS=-race, which then checks the servers
// under the kill as well.
func runScale() scale { return smallScale() }
