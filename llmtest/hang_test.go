package llmtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHang: the listing answers, a completion is held (counted) until its
// client leaves, and is then no longer counted.
func TestHang(t *testing.T) {
	var open atomic.Int64
	srv := httptest.NewServer(Hang(&open))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"x"`) {
		t.Fatalf("listing %q", b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	wait := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); open.Load() != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d held, want %d", open.Load(), want)
			}
		}
	}
	wait(1)
	select {
	case err := <-done:
		t.Fatalf("the completion was answered (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled completion got an answer")
	}
	wait(0)
}
