// Peer: the classic Go skynet (goroutines + unbuffered channels), 1M leaves,
// branching 10, on GOMAXPROCS = the CPU count (Go's default).
//
// Runs one untimed warm-up, then -runs timed runs, and prints the median in
// a machine-readable line:
//
//	skynet_go_ms <median>          (or skynet_go_traced_ms with -trace)
//	skynet_go_runs_ms <run> ...    every timed run, for the record
//
// With -trace the Go execution tracer (runtime/trace) records every timed
// run into a temporary file, deleted afterwards; the trace size is printed
// as skynet_go_trace_bytes <median>. Only the skynet itself is timed, not
// trace.Start/trace.Stop.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/trace"
	"sort"
	"strings"
	"time"
)

const (
	leaves    = 1_000_000
	branching = 10
	expected  = leaves * (leaves - 1) / 2 // 499999500000
)

// skynet sends to out the sum of the leaf numbers num .. num+size-1; an inner
// node starts one goroutine per child and adds up what they send.
func skynet(out chan<- int64, num, size int64) {
	if size == 1 {
		out <- num
		return
	}
	results := make(chan int64)
	childSize := size / branching
	for i := int64(0); i < branching; i++ {
		go skynet(results, num+i*childSize, childSize)
	}
	var sum int64
	for i := 0; i < branching; i++ {
		sum += <-results
	}
	out <- sum
}

func runOnce() (time.Duration, error) {
	out := make(chan int64)
	start := time.Now()
	go skynet(out, 0, leaves)
	sum := <-out
	elapsed := time.Since(start)
	if sum != expected {
		return elapsed, fmt.Errorf("skynet sum is %d, expected %d", sum, expected)
	}
	return elapsed, nil
}

func runTraced() (time.Duration, int64, error) {
	f, err := os.CreateTemp("", "skynet-go-*.trace")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := trace.Start(f); err != nil {
		return 0, 0, err
	}
	elapsed, runErr := runOnce()
	trace.Stop()
	info, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	return elapsed, info.Size(), runErr
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func main() {
	runs := flag.Int("runs", 5, "timed runs (the median is reported)")
	traced := flag.Bool("trace", false, "run with the Go execution tracer (runtime/trace) enabled")
	flag.Parse()
	if *runs < 1 {
		fmt.Fprintln(os.Stderr, "skynet: -runs must be at least 1")
		os.Exit(2)
	}

	if _, err := runOnce(); err != nil { // warm-up: grows the heap and the goroutine free lists
		fmt.Fprintln(os.Stderr, "skynet:", err)
		os.Exit(1)
	}
	var ms, sizes []float64
	for i := 0; i < *runs; i++ {
		var elapsed time.Duration
		var err error
		if *traced {
			var size int64
			elapsed, size, err = runTraced()
			sizes = append(sizes, float64(size))
		} else {
			elapsed, err = runOnce()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "skynet:", err)
			os.Exit(1)
		}
		ms = append(ms, float64(elapsed.Nanoseconds())/1e6)
	}

	all := make([]string, len(ms))
	for i, m := range ms {
		all[i] = fmt.Sprintf("%.3f", m)
	}
	key := "skynet_go_ms"
	if *traced {
		key = "skynet_go_traced_ms"
	}
	fmt.Printf("%s %.3f\n", key, median(ms))
	fmt.Printf("skynet_go_runs_ms %s\n", strings.Join(all, " "))
	fmt.Printf("skynet_go_gomaxprocs %d\n", runtime.GOMAXPROCS(0))
	if *traced {
		fmt.Printf("skynet_go_trace_bytes %.0f\n", median(sizes))
	}
}
