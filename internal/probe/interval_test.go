package probe

import "testing"

func TestRate(t *testing.T) {
	if r := rate(3, 0); r != nil {
		t.Errorf("rate of 0 trials = %+v, want nil", r)
	}
	if r := rate(30, 100); r.Rate != 0.3 || r.K != 30 || r.N != 100 || r.Low >= 0.3 || r.High <= 0.3 {
		t.Errorf("rate(30, 100) = %+v", r)
	}
}
