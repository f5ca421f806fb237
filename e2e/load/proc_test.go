package load

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What the kernel counts of a process, for the figures: the example's CPU
// and peak memory, and the clients' CPU (this process), which share the
// machine's cores with it.

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100 on
// every architecture Go runs Linux on.
const userHZ = 100

// processCPU returns the CPU time process pid has spent, in user and
// kernel mode, all its threads: utime+stime of /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime, the 14th and 15th fields, of a
// /proc/PID/stat line. The 2nd, the command's name in parentheses, may hold
// spaces and parentheses: the fields after it follow the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	fields := strings.Fields(stat[i+1:]) // from the 3rd field on
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: %.100q has no utime and stime", stat)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/PID/stat: utime %q, stime %q are not numbers", fields[11], fields[12])
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// peakRSS returns the most resident memory process pid has had: VmHWM of
// /proc/PID/status, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmHWM(string(b))
}

func parseVmHWM(status string) (int64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("/proc/PID/status: VmHWM %q is not a size in kB", strings.TrimSpace(rest))
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("/proc/PID/status has no VmHWM")
}

// machineCPU returns the CPU time every process of the machine has spent
// since it booted: the first line of /proc/stat, all but idle and iowait.
// Less the example's and the clients', it is what other work took from
// the cores during a run.
func machineCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseMachineCPU(string(b))
}

func parseMachineCPU(stat string) (time.Duration, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: %.100q is not the line of all CPUs", line)
	}
	var busy int64
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q is not a number", f)
		}
		// user nice system idle iowait irq softirq steal guest guest_nice;
		// guest time is counted in user already.
		if i != 3 && i != 4 && i < 8 {
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / userHZ, nil
}

// selfCPU returns the CPU time this process, the clients, has spent.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestParseStatCPU(t *testing.T) {
	// A name with a space and a parenthesis; utime 1234, stime 56.
	line := "4242 (cust (x) 1) S 1 4242 4242 0 -1 4194560 7019 0 0 0 1234 56 0 0 20 0 9 0 1797 1290 2330 18446744073709551615\n"
	if got, err := parseStatCPU(line); err != nil || got != 12900*time.Millisecond {
		t.Errorf("parseStatCPU = %v, %v; want 12.9s", got, err)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 (x) S 1 4242 4242 0 -1 4194560 7019 0 0 0 a 56 0"} {
		if got, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) = %v, want an error", bad, got)
		}
	}
	self, err := processCPU(os.Getpid())
	if err != nil || self <= 0 {
		t.Errorf("processCPU(self) = %v, %v; want some CPU time", self, err)
	}
}

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tcustomers\nVmPeak:\t 1234 kB\nVmHWM:\t   97000 kB\nVmRSS:\t   90000 kB\n"
	if got, err := parseVmHWM(status); err != nil || got != 97000<<10 {
		t.Errorf("parseVmHWM = %d, %v; want %d", got, err, 97000<<10)
	}
	for _, bad := range []string{"Name:\tx\n", "VmHWM:\t12 MB\n", "VmHWM:\tlots kB\n"} {
		if got, err := parseVmHWM(bad); err == nil {
			t.Errorf("parseVmHWM(%q) = %d, want an error", bad, got)
		}
	}
	if got, err := peakRSS(os.Getpid()); err != nil || got <= 0 {
		t.Errorf("peakRSS(self) = %d, %v; want some memory", got, err)
	}
}

func TestParseMachineCPU(t *testing.T) {
	stat := "cpu  100 5 50 9000 20 1 2 3 7 0\ncpu0 50 2 25 4500 10 0 1 1 3 0\n"
	// user+nice+system+irq+softirq+steal = 100+5+50+1+2+3
	if got, err := parseMachineCPU(stat); err != nil || got != 1610*time.Millisecond {
		t.Errorf("parseMachineCPU = %v, %v; want 1.61s", got, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5\n", "cpu 1 x 3 4 5\n"} {
		if got, err := parseMachineCPU(bad); err == nil {
			t.Errorf("parseMachineCPU(%q) = %v, want an error", bad, got)
		}
	}
}
