package schedule

import (
	"strings"
	"testing"
	"time"
)

// TestStampedeSchedule: on a constant 10 req/s, a burst every second from
// 1 s of 200 req/s for 100 ms adds 20 requests 5 ms apart; outside the
// bursts the gaps stay 100 ms. Burst tells the burst's requests, and the
// schedule is the same however it is walked.
func TestStampedeSchedule(t *testing.T) {
	spec, err := ParseStampede("every=1s,width=100ms,rate=200")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Start != time.Second || spec.Keys != FreshKeys || spec.Requests() != 20 {
		t.Fatalf("spec %+v", spec)
	}
	s := &Stampede{Base: Constant{Rate: 10}, Spec: spec}
	var offs []time.Duration
	var bursts []int
	var prev time.Duration
	for n := uint64(0); n < 100; n++ {
		off := s.Pace(n, prev)
		if off < prev {
			t.Fatalf("request %d at %v, before %v", n, off, prev)
		}
		j, ok := s.Burst(n)
		if !ok {
			j = -1
		}
		offs, bursts, prev = append(offs, off), append(bursts, j), off
	}
	perBurst := map[int]int{}
	for n := 1; n < len(offs); n++ {
		gap := offs[n] - offs[n-1]
		switch {
		case bursts[n] >= 0 && bursts[n-1] == bursts[n]:
			if gap != 5*time.Millisecond {
				t.Errorf("requests %d-%d of burst %d are %v apart, want 5ms", n-1, n, bursts[n], gap)
			}
		case bursts[n] < 0 && bursts[n-1] < 0:
			if gap != 100*time.Millisecond {
				t.Errorf("base requests %d-%d are %v apart, want 100ms", n-1, n, gap)
			}
		}
		if bursts[n] >= 0 {
			perBurst[bursts[n]]++
			if want := time.Second + time.Duration(bursts[n])*time.Second; offs[n] < want || offs[n] >= want+100*time.Millisecond {
				t.Errorf("request %d of burst %d at %v, outside its window from %v", n, bursts[n], offs[n], want)
			}
		}
	}
	if perBurst[0] != 20 || perBurst[1] != 20 {
		t.Errorf("requests per burst %v, want 20", perBurst)
	}
	// Random access gives the same answers.
	fresh := &Stampede{Base: Constant{Rate: 10}, Spec: spec}
	for _, n := range []uint64{57, 3, 99, 12, 12, 0} {
		j, ok := fresh.Burst(n)
		if off := fresh.Pace(n, 0); off != offs[n] || ok != (bursts[n] >= 0) || ok && j != bursts[n] {
			t.Errorf("request %d out of order: %v burst %d %v, want %v burst %d", n, off, j, ok, offs[n], bursts[n])
		}
	}
}

func TestParseStampedeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"every=1s,width=2s,rate=5":           "width must be positive and shorter than every",
		"every=1s,width=100ms":               "rate must be",
		"width=100ms,rate=5":                 "every must be",
		"every=1s,width=100ms,rate=5,keys=x": `keys "x"`,
		"every=1s,width=100ms,rate=5,burp=1": `unknown key "burp"`,
		"every=1s,width=100ms,rate=5,start":  "not key=value",
		"every=soon,width=100ms,rate=5":      "every:",
	} {
		if _, err := ParseStampede(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	s, err := ParseStampede("every=10s,start=2s,width=200ms,rate=50,keys=expiring")
	if err != nil || s.Start != 2*time.Second || s.Keys != ExpiringKeys || s.Requests() != 10 {
		t.Errorf("%+v %v", s, err)
	}
	if again, _ := ParseStampede(s.String()); again != s {
		t.Errorf("String does not read back: %s gives %+v", s, again)
	}
}
