package sim

import "testing"

// FuzzDecodeFaults reads fault sets as /admin/faults and spate validate do:
// no input panics, and what is accepted is valid.
func FuzzDecodeFaults(f *testing.F) {
	for _, s := range []string{`{"error_rate":0.05,"spike_rate":0.1,"spike_delay":"300ms"}`, `{"retry_after":"-1s"}`, `{"stall_rate":2}`, `{"error_rat":1}`, `[]`, `{"max_context":-5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := DecodeFaults(b)
		if err != nil {
			return
		}
		if err := fs.Validate(); err != nil {
			t.Fatalf("%q decoded to invalid faults: %v", b, err)
		}
	})
}
