package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/spate-dev/spate/internal/scrub"
)

// Faults switches a fault injector on for one stage: its settings are PUT
// (as JSON) to an admin endpoint when the stage starts, and the endpoint is
// sent DELETE when the stage ends. The simulator's /admin/faults speaks
// this; so will the chaos proxy.
type Faults struct {
	URL string
	Set map[string]any
}

// faultTimeout bounds each call to the admin endpoint.
const faultTimeout = 10 * time.Second

func (f *Faults) call(ctx context.Context, method string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, faultTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, f.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var msg bytes.Buffer
		msg.ReadFrom(http.MaxBytesReader(nil, resp.Body, 1024))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, scrub.Text(string(bytes.TrimSpace(msg.Bytes())), 300))
	}
	return nil
}

// on sets the faults.
func (f *Faults) on(ctx context.Context) error {
	body, err := json.Marshal(f.Set)
	if err != nil {
		return fmt.Errorf("encoding faults: %w", err)
	}
	if err := f.call(ctx, http.MethodPut, body); err != nil {
		return fmt.Errorf("setting faults at %s: %w", f.URL, err)
	}
	return nil
}

// off clears the faults, even when the run is being interrupted.
func (f *Faults) off(ctx context.Context) error {
	if err := f.call(context.WithoutCancel(ctx), http.MethodDelete, nil); err != nil {
		return fmt.Errorf("clearing faults at %s: %w", f.URL, err)
	}
	return nil
}
