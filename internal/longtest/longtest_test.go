package longtest

import "testing"

// TestSkip: a long test runs exactly when the integration tag is on.
func TestSkip(t *testing.T) {
	ran := false
	t.Run("long", func(t *testing.T) {
		Skip(t)
		ran = true
	})
	if ran != On {
		t.Errorf("long test ran %v with On %v", ran, On)
	}
}
