package chaos

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// Stats are the proxy's counts since it started, as GET /admin/stats
// returns them.
type Stats struct {
	// Requests is how many requests came in (admin calls not counted);
	// Forwarded how many reached the upstream and were answered by it.
	Requests  int64 `json:"requests"`
	Forwarded int64 `json:"forwarded"`
	// Held is how many requests black-holes hold now.
	Held int64 `json:"held"`
	// Injected counts faults by kind (error, rate_limit, reset, blackhole,
	// latency, spike, bandwidth, truncate, stall, drip).
	Injected map[string]int64 `json:"injected"`
	// Failing is the sum of the kinds that fail a request by themselves:
	// error, rate_limit, reset, blackhole and truncate.
	Failing int64 `json:"failing"`
	// Windows are the rules' time windows, in the order applied.
	Windows []Window `json:"windows"`
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	s := Stats{Requests: p.reqs.Load(), Forwarded: p.fwd.Load(), Held: p.held.Load(), Injected: make(map[string]int64, numKinds)}
	for k := Kind(0); k < numKinds; k++ {
		v := p.inj[k].Load()
		s.Injected[k.String()] = v
		if k.Failing() {
			s.Failing += v
		}
	}
	p.mu.Lock()
	s.Windows = append([]Window{}, p.windows...)
	p.mu.Unlock()
	return s
}

// faultsView is what GET /admin/faults returns.
type faultsView struct {
	Set       *Set      `json:"set"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// serveFaults serves GET (the set in force), PUT/POST (replace it) and
// DELETE (clear it) on /admin/faults, as the simulator's does.
func (p *Proxy) serveFaults(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut, http.MethodPost:
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
		if err != nil {
			http.Error(w, "reading fault set: "+err.Error(), http.StatusBadRequest)
			return
		}
		s, err := DecodeSet(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := p.Apply(s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	case http.MethodDelete:
		p.Clear()
	default:
		w.Header().Set("Allow", "GET, PUT, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var v faultsView
	if a := p.cur.Load(); a != nil {
		s := a.set
		v.Set, v.AppliedAt = &s, a.at
	}
	writeJSON(w, v)
}

// serveStats serves GET /admin/stats.
func (p *Proxy) serveStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	writeJSON(w, p.Stats())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
