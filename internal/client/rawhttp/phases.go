package rawhttp

import "github.com/spate-dev/spate/internal/record"

// FillPhases records the HTTP phases Do measured into ps: DNS and connect
// only when the request opened its connection (DNS only when the address
// was a name), write when the request was written, first byte when a
// response byte came after it. The reactor speaks clear HTTP: there is no
// TLS phase.
func (r *Result) FillPhases(ps *record.Phases) {
	if !r.Reused && !r.Ready.IsZero() {
		if r.Dial.Lookup {
			ps.Set(record.PhaseDNS, r.Dial.DNS)
		}
		ps.Set(record.PhaseConnect, r.Dial.Connect)
	}
	if r.Written.IsZero() {
		return
	}
	ps.Set(record.PhaseWrite, r.Written.Sub(r.Ready))
	if !r.FirstByte.IsZero() {
		ps.Set(record.PhaseFirstByte, r.FirstByte.Sub(r.Written))
	}
}
