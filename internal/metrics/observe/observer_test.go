package observe

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// TestObserverRatesAndWarnings scrapes four endpoints through a stage: one
// whose counter grows by exactly 10 per scrape (so rate × interval must be
// 10 whatever the timing), one answering 404, one serving malformed text
// and one refusing connections. The good one's series are kept and each
// bad one gives a warning naming it.
func TestObserverRatesAndWarnings(t *testing.T) {
	var n atomic.Int64
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Accept"); !strings.Contains(got, "text/plain") {
			t.Errorf("Accept %q", got)
		}
		i := n.Add(1)
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %d\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n", 10*i, i)
	}))
	defer good.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	garbled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>this is not Prometheus text</html>\n")
	}))
	defer garbled.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/metrics"
	ln.Close()

	o := New(Config{
		Endpoints: []string{good.URL + "/metrics", missing.URL + "/metrics", garbled.URL + "/metrics", refused},
		Interval:  50 * time.Millisecond,
	})
	defer o.Close()
	start := time.Now()
	o.StageStart(context.Background(), runner.Stage{Name: "s"}, start)
	time.Sleep(300 * time.Millisecond)
	sc := &result.Scenario{Name: "s"}
	o.StageEnd(runner.Stage{Name: "s"}, sc)
	srv := sc.Server
	if srv == nil {
		t.Fatal("no Server section")
	}
	if len(srv.OffsetsS) < 2 {
		t.Fatalf("%d scrapes, want at least the first and the last", len(srv.OffsetsS))
	}
	if srv.OffsetsS[0] < 0 || srv.OffsetsS[0] > srv.OffsetsS[1] {
		t.Errorf("offsets %v", srv.OffsetsS)
	}
	if got := int(n.Load()); got < len(srv.OffsetsS) {
		t.Errorf("good endpoint scraped %d times, %d offsets", got, len(srv.OffsetsS))
	}
	// The gauge is the scrape's sequence number i, the counter 10·i (a
	// scrape cut short by the stage's end is served but not kept, so
	// numbers may skip).
	running := vals(srv.Series["requests_running"])
	rate := srv.Series["generation_tokens_per_s"]
	if len(rate.Values) != len(srv.OffsetsS) || len(running) != len(srv.OffsetsS) || rate.Values[0] != nil {
		t.Fatalf("rate series %v, running %v", vals(rate), running)
	}
	for i := 1; i < len(srv.OffsetsS); i++ {
		dt := srv.OffsetsS[i] - srv.OffsetsS[i-1]
		added := 10 * (running[i] - running[i-1])
		if running[i] <= running[i-1] || rate.Values[i] == nil || math.Abs(*rate.Values[i]*dt-added) > 1e-9 {
			t.Errorf("scrape %d: rate %v × %v s ≠ the %v tokens added (running %v)", i, vals(rate)[i], dt, added, running)
		}
	}
	if srv.Series["requests_running"].Metric != "vllm:num_requests_running" {
		t.Errorf("metric %q", srv.Series["requests_running"].Metric)
	}
	for _, want := range []string{missing.URL + "/metrics: HTTP 404", garbled.URL + "/metrics: malformed exposition text", refused + ": "} {
		found := false
		for _, w := range srv.Warnings {
			found = found || strings.Contains(w, want)
		}
		if !found {
			t.Errorf("no warning containing %q in %q", want, srv.Warnings)
		}
	}
	if srv.IntervalS != 0.05 || len(srv.Endpoints) != 4 {
		t.Errorf("interval %v endpoints %v", srv.IntervalS, srv.Endpoints)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("StageEnd took %v: the last scrape must be bounded", time.Since(start))
	}
}

func TestCheckEndpoint(t *testing.T) {
	for _, bad := range []string{"", "h:9/metrics", "ftp://h/metrics", "http:///metrics"} {
		if CheckEndpoint(bad) == nil {
			t.Errorf("CheckEndpoint(%q) accepted it", bad)
		}
	}
	if err := CheckEndpoint("http://127.0.0.1:8000/metrics"); err != nil {
		t.Error(err)
	}
}

// TestCloseWithoutStageEnd stops a stage's scraper that never got its
// StageEnd (a stage that failed to start): Close waits for it.
func TestCloseWithoutStageEnd(t *testing.T) {
	o := New(Config{Endpoints: []string{"http://127.0.0.1:1/metrics"}, Interval: 10 * time.Millisecond})
	o.StageStart(context.Background(), runner.Stage{}, time.Now())
	o.Close()
	o.Close()
}

// TestRecordKeepsTTFTBySendSecond files each successful request's TTFT
// under the second of the stage it was sent in; failures, warm-up and
// requests without a first token are left out.
func TestRecordKeepsTTFTBySendSecond(t *testing.T) {
	o := New(Config{Interval: time.Hour})
	start := time.Now()
	o.StageStart(context.Background(), runner.Stage{}, start)
	defer o.Close()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for _, r := range []record.Record{
		{Sent: at(2500), FirstToken: at(2600), End: at(2700)},
		{Sent: at(2900), FirstToken: at(3150), End: at(3200)},
		{Sent: at(100), FirstToken: at(130)},
		{Sent: at(200), FirstToken: at(900), Err: record.Timeout},
		{Sent: at(300), FirstToken: at(400), Warmup: true},
		{Sent: at(400)},
	} {
		o.Record("s", &r)
	}
	got := o.cur.Load().ttft
	want := [][]float64{{30}, nil, {100, 250}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TTFTs by send second = %v, want %v", got, want)
	}
}
