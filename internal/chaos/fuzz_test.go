package chaos

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"error_rate=0.1,latency=lognormal:3.2:0.5,from=10s,until=20s", "bandwidth=1000", "stall_rate=1,stall_duration=2s,stall_after=4", "x", "=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("ParseRule(%q) accepted an invalid rule: %v", s, err)
		}
		// The JSON of an accepted rule reads back to the same rule.
		js, _ := r.MarshalJSONString()
		s2, err := DecodeSet([]byte(js))
		if err != nil || s2.Rule != r {
			t.Fatalf("round trip of %q: %+v, %v", js, s2.Rule, err)
		}
	})
}

func FuzzDecodeSet(f *testing.F) {
	for _, s := range []string{`{"error_rate":0.5,"schedule":[{"from":"1s","reset_rate":1}]}`, `{"latency":"uniform:1ms:2ms"}`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSet(b)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted an invalid set: %v", err)
		}
		rules := s.Rules()
		for i := range rules {
			rules[i] = rules[i].withDefaults()
		}
		decide(rules, s.Seed, 1, 0) // must not panic
	})
}

func FuzzParseLatency(f *testing.F) {
	for _, s := range []string{"fixed:50ms", "uniform:10ms:50ms", "lognormal:3.2:0.5", "lognormal:1e308:1", "",
		"fixed:20m", "uniform:1s:11m"} { // found: drew 20 min, over maxLatency
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLatency(s)
		if err != nil {
			return
		}
		if l2, err := ParseLatency(l.String()); err != nil || l2 != l {
			t.Fatalf("%q → %q → %+v, %v", s, l.String(), l2, err)
		}
		d := newDraws(1, 0, 0)
		if v := l.draw(&d); v < 0 || v > maxLatency {
			t.Fatalf("%q drew %v", s, v)
		}
	})
}

func FuzzEventEnd(f *testing.F) {
	for _, s := range []string{"data: a\n\ndata: b\n\n", "data: a\r\n\r\n", "data: x", "\n\n\r\n\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n := eventEnd(b)
		if n == -1 {
			if bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\r\n\r\n")) {
				t.Fatalf("missed an event end in %q", b)
			}
			return
		}
		if n > len(b) || !(bytes.HasSuffix(b[:n], []byte("\n\n")) || bytes.HasSuffix(b[:n], []byte("\r\n\r\n"))) {
			t.Fatalf("eventEnd(%q) = %d", b, n)
		}
	})
}

func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"max_tokens_1=0.05,oversize=0.02,malformed=0.01,max_context=8192", "oversize=2", "x=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err == nil && m.Validate() != nil {
			t.Fatalf("accepted invalid %q", s)
		}
	})
}

// TestLatencyBound: a fixed or uniform latency over the 10-minute bound is
// refused (fixed:20m drew 20 minutes: FuzzParseLatency found it); the
// bound itself is a latency.
func TestLatencyBound(t *testing.T) {
	for _, s := range []string{"fixed:20m", "uniform:1s:11m", "fixed:10m1s"} {
		if _, err := ParseLatency(s); err == nil || !strings.Contains(err.Error(), "10m0s") {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"fixed:10m", "uniform:0s:10m"} {
		if _, err := ParseLatency(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}
