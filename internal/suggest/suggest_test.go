package suggest

import "testing"

func TestClosest(t *testing.T) {
	opts := []string{"concurrency", "max-concurrency", "rate", "requests"}
	for _, c := range []struct{ name, want string }{
		{"concurrencyy", "concurrency"},
		{"rte", "rate"},
		{"requets", "requests"},
		{"duration", ""}, // no typo of any
		{"concurrency", "concurrency"},
	} {
		if got := Closest(c.name, opts); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
