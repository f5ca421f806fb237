package loadkit

import (
	"strings"
	"testing"
)

// A transport's error line is a problem of the run, unless the run
// excuses it or its clients are closing.
func TestTransportLogger(t *testing.T) {
	var p Problems
	log := p.TransportLogger("c1", func(line string) bool { return strings.Contains(line, "killed") })
	log.Error("stream broke")
	log.Error("the instance was killed")
	log.Warn("below Error: quiet")
	if p.Count() != 1 || p.Excused.Load() != 1 {
		t.Fatalf("%d problems, %d excused; want 1 and 1", p.Count(), p.Excused.Load())
	}
	p.Closing.Store(true)
	log.Error("while closing")
	if p.Count() != 1 {
		t.Errorf("a line logged while closing became a problem: %d", p.Count())
	}
}
