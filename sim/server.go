package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is one simulated model server. It implements http.Handler; create
// it with New and stop it with Close. Several Servers may run in one process:
// each has its own clock goroutine and its own Prometheus registry.
type Server struct {
	cfg     Config
	vocab   *vocab
	metrics *simMetrics
	faults  atomic.Pointer[Faults]
	mux     *http.ServeMux
	created int64 // Unix time of New, reported by /v1/models

	pacers []*pacer // deterministic mode: requests are spread over them
	driver *driver  // engine mode
	// kvLimit is the most tokens one request may need in engine mode (the
	// KV cache), 0 in deterministic mode.
	kvLimit   int
	blockSize int             // > 0: compute prefix-cache keys of prompts
	adapters  map[string]bool // configured LoRA adapter names

	reqSeq atomic.Uint64
	// vulnFollowed and vulnRefused count the attacks the vulnerable
	// behaviour followed and refused (see Vulnerable).
	vulnFollowed, vulnRefused atomic.Uint64
	faultCounter              [numFaultKinds]prometheus.Counter

	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	clock    sync.WaitGroup // the pacer or driver goroutines
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup // requests being served
}

// New validates cfg and starts a Server (its clock goroutine runs until
// Close).
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim: invalid config: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:     cfg,
		vocab:   newVocab(),
		metrics: newSimMetrics(cfg.Model),
		created: time.Now().Unix(),
	}
	f := cfg.Faults
	s.faults.Store(&f)
	for k := range numFaultKinds {
		s.faultCounter[k] = s.metrics.faults.WithLabelValues(k.String())
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())

	if e := cfg.Engine; e != nil {
		core := newEngineCore(*e, cfg.Seed)
		s.kvLimit = core.capacityTokens()
		if e.PrefixCaching {
			s.blockSize = e.BlockSize
		}
		s.adapters = make(map[string]bool, len(e.LoRA.Adapters))
		for _, a := range e.LoRA.Adapters {
			s.adapters[a] = true
		}
		s.driver = newDriver(core, s.metrics)
		s.clock.Go(func() { s.driver.run(s.ctx) })
	} else {
		// Each pacer writes its streams' events itself. A pacer keeps its
		// processor while it sleeps near a tick when the process has two
		// more to spare (see timerAlarm): `spate sim`, alone in its process,
		// raises GOMAXPROCS so.
		n := max(cfg.ClockThreads, 1)
		held := runtime.GOMAXPROCS(0) >= n+2
		if cfg.holdClock != 0 {
			held = cfg.holdClock > 0
		}
		for range n {
			snd, err := newSender(cfg.WritePath)
			if err != nil {
				s.cancel()
				s.clock.Wait()
				return nil, fmt.Errorf("sim: %w", err)
			}
			p := newPacer(cfg.TTFT, cfg.ITL, cfg.Tick, snd, cfg.portableAlarm, held)
			s.pacers = append(s.pacers, p)
			s.clock.Go(func() { p.run(s.ctx) })
		}
	}

	s.mux = http.NewServeMux()
	s.mux.Handle("/v1/chat/completions", only(http.MethodPost, s.handleGenerate(epChat)))
	s.mux.Handle("/v1/completions", only(http.MethodPost, s.handleGenerate(epCompletion)))
	s.mux.Handle("/v1/embeddings", only(http.MethodPost, http.HandlerFunc(s.handleEmbeddings)))
	s.rankRoutes(s.mux)
	s.mux.Handle("/v1/responses", only(http.MethodPost, s.handleResponses(s.handleGenerate(epChat))))
	s.mux.Handle("/v1/models", only(http.MethodGet, http.HandlerFunc(s.handleModels)))
	s.mux.Handle("/tokenize", only(http.MethodPost, http.HandlerFunc(s.handleTokenize)))
	s.mux.Handle("/health", only(http.MethodGet, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })))
	s.mux.Handle("/metrics", only(http.MethodGet, promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})))
	s.mux.HandleFunc("/admin/faults", s.handleAdminFaults)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not found: "+r.Method+" "+r.URL.Path, "invalid_request_error", "", "not_found")
	})
	return s, nil
}

// only answers 405 with OpenAI's error JSON to methods other than method
// (and HEAD for GET).
func only(method string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed on "+r.URL.Path+"; use "+method+".", "invalid_request_error", "", "method_not_allowed")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the OpenAI-compatible API, /health, /metrics and
// /admin/faults.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetFaults replaces the injected faults; requests that arrive afterwards
// see the new settings. Out-of-range values are clamped (rates to [0, 1],
// with RateLimitRate cut so that ErrorRate + RateLimitRate <= 1; negative
// durations and MaxContext to 0); call Faults.Validate first to reject them.
func (s *Server) SetFaults(f Faults) {
	f = f.clamped()
	s.faults.Store(&f)
}

// Vulnerable returns how many attack prompts the vulnerable behaviour
// (Faults.Vulnerability) has followed and refused so far.
func (s *Server) Vulnerable() (followed, refused uint64) {
	return s.vulnFollowed.Load(), s.vulnRefused.Load()
}

// Faults returns the faults in force.
func (s *Server) Faults() Faults { return *s.faults.Load() }

// Config returns a copy of the server's configuration, defaults filled in
// (Faults are those it started with; see Server.Faults for the current ones).
func (s *Server) Config() Config { return s.cfg.withDefaults() }

// Close stops the server's clock goroutine, ends the requests in flight (a
// stream is cut where it is) and waits for both. Later requests get 503.
// It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.clock.Wait()
	s.inflight.Wait()
	return nil
}

// pacerFor returns the pacer of request seqNo, nil in engine mode.
func (s *Server) pacerFor(seqNo uint64) *pacer {
	if len(s.pacers) == 0 {
		return nil
	}
	return s.pacers[seqNo%uint64(len(s.pacers))]
}

// enter registers a request in flight; false once the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

func (s *Server) leave() { s.inflight.Done() }

// Serve serves s on ln until ctx is done, then shuts the HTTP server down
// (streams in flight are cut) and returns nil. It does not Close s.
func Serve(ctx context.Context, ln net.Listener, s *Server) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       ConnContext,
		ErrorLog:          nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving simulator on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutting down simulator on %s: %w", ln.Addr(), err)
	}
	return nil
}

// modelsResponse is the JSON of /v1/models.
type modelsResponse struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len,omitempty"`
}

// maxModelLen is the context the models listing gives: the MaxContext
// fault's, or the KV cache's size when smaller (0: none).
func (s *Server) maxModelLen() int {
	maxLen := s.faults.Load().MaxContext
	if s.kvLimit > 0 && (maxLen == 0 || s.kvLimit < maxLen) {
		maxLen = s.kvLimit
	}
	return maxLen
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	maxLen := s.maxModelLen()
	base := s.cfg.Model
	resp := modelsResponse{Object: "list", Data: []modelCard{{ID: base, Object: "model", Created: s.created, OwnedBy: "spate", Root: base, MaxModelLen: maxLen}}}
	if e := s.cfg.Engine; e != nil {
		for _, a := range e.LoRA.Adapters {
			resp.Data = append(resp.Data, modelCard{ID: a, Object: "model", Created: s.created, OwnedBy: "spate", Root: a, Parent: &base, MaxModelLen: maxLen})
		}
	}
	writeJSON(w, http.StatusOK, resp)
}
