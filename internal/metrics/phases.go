package metrics

import (
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// PhaseKeys are the histogram keys of the HTTP phases, by record.Phase:
// kept among the encoded histograms for merging, summarised as
// result.Load.HTTPPhases (docs/figures.md, "HTTP phases").
var PhaseKeys = [record.NumPhases]string{
	record.PhaseDNS:       "http_dns_ms",
	record.PhaseConnect:   "http_connect_ms",
	record.PhaseTLS:       "http_tls_ms",
	record.PhaseWrite:     "http_write_ms",
	record.PhaseFirstByte: "http_first_byte_ms",
}

// IsPhase reports whether key is an HTTP phase's histogram.
func IsPhase(key string) bool {
	for _, k := range PhaseKeys {
		if k == key {
			return true
		}
	}
	return false
}

// recordPhases adds the phases rec had (an absent one adds nothing).
func (r *Recorder) recordPhases(rec *record.Record) {
	for p := range record.NumPhases {
		if d, ok := rec.Phases.Get(p); ok {
			r.phases[p].recordDuration(d)
		}
	}
}

// SetPhase sets the summary d of the phase histogram key in l, creating
// l.HTTPPhases when needed; a d without count sets nothing. Used by the
// recorder and by merge.
func SetPhase(l *result.Load, key string, d result.Dist) {
	if d.Count == 0 {
		return
	}
	if l.HTTPPhases == nil {
		l.HTTPPhases = &result.HTTPPhases{}
	}
	p := l.HTTPPhases
	switch key {
	case PhaseKeys[record.PhaseDNS]:
		p.DNSMS = &d
	case PhaseKeys[record.PhaseConnect]:
		p.ConnectMS = &d
	case PhaseKeys[record.PhaseTLS]:
		p.TLSMS = &d
	case PhaseKeys[record.PhaseWrite]:
		p.WriteMS = &d
	case PhaseKeys[record.PhaseFirstByte]:
		p.FirstByteMS = &d
	}
}
