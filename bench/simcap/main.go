//go:build linux

// Command simcap measures how many concurrent streams spate's simulator
// sustains within timing tolerance, and its CPU cost per streamed request.
//
// It drives a running `spate sim` (deterministic mode) on loopback with C
// closed-loop workers, each streaming chat completions back to back, and
// timestamps every SSE event as its line is read. For each concurrency level
// it reports TTFT and ITL (median, p99) against the settings, the fraction of
// events that arrived batched with the previous one, and — when given the
// simulator's pid — the simulator's CPU time (user+system, from
// /proc/PID/stat) divided by the requests completed in the level.
//
// Usage (see bench/sim-capacity.sh):
//
//	simcap -url http://127.0.0.1:18080 -pid PID -ttft 50ms -itl 10ms -tokens 128 -levels 1000,5000,10000 -duration 20s
//
// It reads CPU times from /proc and getrusage, so it builds on Linux only.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// hist is a concurrent histogram of durations: 10 µs buckets below 1 s,
// 1 ms buckets from 1 s to 121 s.
type hist struct {
	fine   []atomic.Int64
	coarse []atomic.Int64
	over   atomic.Int64
	count  atomic.Int64
}

const (
	fineBucket   = 10 * time.Microsecond
	coarseBucket = time.Millisecond
	fineSpan     = time.Second
	coarseSpan   = 120 * time.Second
)

func newHist() *hist {
	return &hist{fine: make([]atomic.Int64, int(fineSpan/fineBucket)), coarse: make([]atomic.Int64, int(coarseSpan/coarseBucket))}
}

func (h *hist) add(d time.Duration) {
	h.count.Add(1)
	switch {
	case d < fineSpan:
		h.fine[max(d, 0)/fineBucket].Add(1)
	case d < fineSpan+coarseSpan:
		h.coarse[(d-fineSpan)/coarseBucket].Add(1)
	default:
		h.over.Add(1)
	}
}

// quantile returns the q-quantile (the middle of its bucket).
func (h *hist) quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n-1)) + 1
	var acc int64
	for i := range h.fine {
		if acc += h.fine[i].Load(); acc >= rank {
			return time.Duration(i)*fineBucket + fineBucket/2
		}
	}
	for i := range h.coarse {
		if acc += h.coarse[i].Load(); acc >= rank {
			return fineSpan + time.Duration(i)*coarseBucket + coarseBucket/2
		}
	}
	return fineSpan + coarseSpan
}

// level is the outcome of one concurrency level.
type level struct {
	conc           int
	completed      int64 // every request completed in the level, ramp-up included (CPU is over all of it)
	failed         int64
	short          int64 // streams with fewer tokens than asked
	ttft, itl      *hist
	batched        int64 // content events read together with the previous one (gap < 50 µs)
	events         int64
	simCPU, ownCPU cpuTime
	wall           time.Duration
	firstErr       atomic.Value
}

func main() {
	var (
		url      = flag.String("url", "http://127.0.0.1:18080", "simulator base URL (loopback)")
		pid      = flag.Int("pid", 0, "simulator process id, to read its CPU time from /proc (0: skip)")
		ttft     = flag.Duration("ttft", 50*time.Millisecond, "the simulator's --ttft")
		itl      = flag.Duration("itl", 10*time.Millisecond, "the simulator's --itl")
		tokens   = flag.Int("tokens", 128, "tokens per stream (max_tokens)")
		levels   = flag.String("levels", "1000,5000,10000", "comma-separated concurrency levels")
		duration = flag.Duration("duration", 20*time.Second, "measured time per level (after one stream length of ramp-up)")
		tol      = flag.Duration("tol", time.Millisecond, "timing tolerance for the verdict (median error)")
		tol99    = flag.Duration("tol99", 0, "timing tolerance of the p99s for the verdict (0: p99 not judged)")
		jsonOut  = flag.Bool("json", false, "print one JSON object per level instead of the table")
		client   = flag.String("client", "http", "http (net/http, a goroutine per stream), raw (epoll loops, far cheaper per event) or uring (one io_uring loop, multishot receives with the kernel's receive times)")
		loops    = flag.Int("loops", 1, "raw client: epoll loops (goroutines)")
	)
	flag.BoolVar(&rawStamps, "stamps", false, "raw client: read with recvmsg(2) and the kernel's receive time, as spate's reactor does (the uring client always does)")
	flag.Parse()
	if !strings.HasPrefix(*url, "http://127.") && !strings.HasPrefix(*url, "http://localhost") && !strings.HasPrefix(*url, "http://[::1]") {
		fmt.Fprintln(os.Stderr, "simcap: -url must be a loopback address")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *client != "http" && *client != "raw" && *client != "uring" {
		fmt.Fprintln(os.Stderr, "simcap: -client must be http, raw or uring")
		os.Exit(2)
	}
	banner := os.Stdout
	if *jsonOut {
		banner = os.Stderr
	}
	fmt.Fprintf(banner, "simcap: %s ttft=%v itl=%v tokens=%d duration=%v per level; %s client, GOMAXPROCS=%d\n", *url, *ttft, *itl, *tokens, *duration, *client, runtime.GOMAXPROCS(0))
	if !*jsonOut {
		fmt.Printf("%7s %9s %6s %9s %9s %9s %9s %9s %9s %8s %10s %10s %10s %10s %s\n",
			"conc", "requests", "fail", "ttft_p50", "ttft_p99", "ttft_err", "itl_p50", "itl_p99", "itl_err", "batched",
			"sim_cpu/r", "sim_usr/r", "sim_sys/r", "cli_cpu/r", "verdict")
	}
	for _, ls := range strings.Split(*levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(ls))
		if err != nil || c <= 0 {
			fmt.Fprintf(os.Stderr, "simcap: bad level %q\n", ls)
			os.Exit(2)
		}
		var l *level
		switch *client {
		case "uring":
			l = runURing(ctx, strings.TrimPrefix(*url, "http://"), *pid, c, *ttft, *itl, *tokens, *duration)
		case "raw":
			l = runRaw(ctx, strings.TrimPrefix(*url, "http://"), *pid, c, *ttft, *itl, *tokens, *duration, *loops)
		default:
			l = run(ctx, *url, *pid, c, *ttft, *itl, *tokens, *duration)
		}
		if ctx.Err() != nil {
			return
		}
		te := l.ttft.quantile(0.5) - *ttft
		ie := l.itl.quantile(0.5) - *itl
		within := abs(te) <= *tol && abs(ie) <= *tol && l.failed == 0 && l.short == 0
		if *tol99 > 0 && (abs(l.ttft.quantile(0.99)-*ttft) > *tol99 || abs(l.itl.quantile(0.99)-*itl) > *tol99) {
			within = false
		}
		verdict := "within"
		if !within {
			verdict = "OUT of"
		}
		verdict += fmt.Sprintf(" ±%v", *tol)
		if *tol99 > 0 {
			verdict += fmt.Sprintf(" (p99 ±%v)", *tol99)
		}
		if *jsonOut {
			perMS := func(d time.Duration) float64 { return float64(d) / float64(max(l.completed, 1)) / 1e6 }
			b, _ := json.Marshal(map[string]any{
				"conc": c, "requests": l.completed, "failed": l.failed + l.short,
				"ttft_p50_ms": msf(l.ttft.quantile(0.5)), "ttft_p99_ms": msf(l.ttft.quantile(0.99)),
				"itl_p50_ms": msf(l.itl.quantile(0.5)), "itl_p99_ms": msf(l.itl.quantile(0.99)),
				"batched_pct": 100 * float64(l.batched) / float64(max(l.events, 1)),
				"sim_cpu_ms":  perMS(l.simCPU.total()), "sim_usr_ms": perMS(l.simCPU.user), "sim_sys_ms": perMS(l.simCPU.sys),
				"cli_cpu_ms": perMS(l.ownCPU.total()), "within": within, "wall_s": l.wall.Seconds(),
				"first_error": l.firstErr.Load(),
			})
			fmt.Println(string(b))
			continue
		}
		per := func(d time.Duration) string {
			if l.completed == 0 || d == 0 {
				return "-"
			}
			return fmt.Sprintf("%.3fms", float64(d)/float64(l.completed)/1e6)
		}
		fmt.Printf("%7d %9d %6d %9s %9s %9s %9s %9s %9s %7.2f%% %10s %10s %10s %10s %s\n",
			c, l.completed, l.failed+l.short, ms(l.ttft.quantile(0.5)), ms(l.ttft.quantile(0.99)), ms(te),
			ms(l.itl.quantile(0.5)), ms(l.itl.quantile(0.99)), ms(ie),
			100*float64(l.batched)/float64(max(l.events, 1)),
			per(l.simCPU.total()), per(l.simCPU.user), per(l.simCPU.sys), per(l.ownCPU.total()), verdict)
		if e, ok := l.firstErr.Load().(string); ok {
			fmt.Printf("        first error: %s\n", e)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/1e6) }

func msf(d time.Duration) float64 { return float64(d) / 1e6 }

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// run drives one level: c workers, each started at a staggered offset within
// one stream length, streaming back to back; requests that start in the
// measured window are counted.
func run(ctx context.Context, url string, pid, c int, ttft, itl time.Duration, tokens int, duration time.Duration) *level {
	l := &level{conc: c, ttft: newHist(), itl: newHist()}
	tr := &http.Transport{
		MaxIdleConnsPerHost: c,
		MaxConnsPerHost:     0,
		DisableCompression:  true,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: -1}).DialContext,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := fmt.Sprintf(`{"model":"simcap","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, tokens)
	streamLen := ttft + time.Duration(tokens-1)*itl
	rampUp := streamLen + time.Second
	start := time.Now()
	measureFrom := start.Add(rampUp)
	end := measureFrom.Add(duration)
	lctx, cancel := context.WithDeadline(ctx, end.Add(streamLen+5*time.Second))
	defer cancel()

	simCPU0 := procCPU(pid)
	own0 := selfCPU()
	var wg sync.WaitGroup
	for w := range c {
		offset := time.Duration(int64(streamLen) * int64(w) / int64(c))
		wg.Go(func() {
			time.Sleep(offset)
			for {
				t := time.Now()
				if !t.Before(end) || lctx.Err() != nil {
					return
				}
				measured := !t.Before(measureFrom)
				oneStream(lctx, client, url, body, tokens, l, measured)
			}
		})
	}
	wg.Wait()
	l.wall = time.Since(start)
	l.simCPU = procCPU(pid).sub(simCPU0)
	l.ownCPU = selfCPU().sub(own0)
	return l
}

// oneStream sends one request and reads its events.
func oneStream(ctx context.Context, c *http.Client, url, body string, tokens int, l *level, measured bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	var sent time.Time
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { sent = time.Now() },
	}))
	fail := func(msg string) {
		if ctx.Err() != nil {
			return
		}
		atomic.AddInt64(&l.failed, 1)
		l.firstErr.CompareAndSwap(nil, msg)
	}
	resp, err := c.Do(req)
	if err != nil {
		fail(err.Error())
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail(resp.Status)
		_, _ = io.Copy(io.Discard, resp.Body)
		return
	}
	br := bufio.NewReaderSize(resp.Body, 8192)
	var last time.Time
	n := 0
	done := false
	for {
		line, err := br.ReadSlice('\n')
		now := time.Now()
		if err != nil {
			break
		}
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		if bytes.HasPrefix(line, []byte("data: [DONE]")) {
			done = true
			continue
		}
		i := bytes.Index(line, []byte(`"delta":{"content":"`))
		if i < 0 || line[i+len(`"delta":{"content":"`)] == '"' {
			continue // role-only, empty or usage event
		}
		if measured {
			if n == 0 {
				l.ttft.add(now.Sub(sent))
			} else {
				gap := now.Sub(last)
				l.itl.add(gap)
				atomic.AddInt64(&l.events, 1)
				if gap < 50*time.Microsecond {
					atomic.AddInt64(&l.batched, 1)
				}
			}
		}
		last = now
		n++
	}
	if ctx.Err() != nil {
		return
	}
	if !done {
		fail("stream ended without [DONE]")
		return
	}
	if n != tokens {
		atomic.AddInt64(&l.short, 1)
		l.firstErr.CompareAndSwap(nil, fmt.Sprintf("stream had %d content events, want %d", n, tokens))
	}
	atomic.AddInt64(&l.completed, 1)
}

// procCPU returns the user and system CPU time of process pid (0 if
// unknown).
func procCPU(pid int) cpuTime {
	if pid <= 0 {
		return cpuTime{}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTime{}
	}
	// Fields after the command name (which may contain spaces) in parens.
	s := string(b)
	s = s[strings.LastIndexByte(s, ')')+2:]
	f := strings.Fields(s)
	if len(f) < 13 {
		return cpuTime{}
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return cpuTime{user: time.Duration(ut) * time.Second / clkTck, sys: time.Duration(st) * time.Second / clkTck}
}

// selfCPU returns this process's CPU time.
func selfCPU() cpuTime {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuTime{}
	}
	return cpuTime{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}
}

// cpuTime is user and system CPU time.
type cpuTime struct{ user, sys time.Duration }

func (c cpuTime) sub(o cpuTime) cpuTime { return cpuTime{c.user - o.user, c.sys - o.sys} }
func (c cpuTime) total() time.Duration  { return c.user + c.sys }
