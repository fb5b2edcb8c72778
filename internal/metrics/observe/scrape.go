package observe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	dto "github.com/prometheus/client_model/go"

	"github.com/spate-dev/spate/internal/scrub"
)

// maxBody bounds one scrape's response: a server that streams without end
// must not fill memory.
const maxBody = 64 << 20

// accept asks for the classic text format, which ParseText reads.
const accept = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// fetch scrapes one endpoint.
func fetch(ctx context.Context, c *http.Client, endpoint string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %w", err)
	}
	req.Header.Set("Accept", accept)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, fmt.Errorf("HTTP %s: is this the server's metrics URL (often /metrics)?", resp.Status)
	}
	fams, err := ParseText(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("malformed exposition text: %w", err)
	}
	return fams, nil
}

// tag adds the label spate_endpoint="i" to every sample, so that series
// with the same labels from two endpoints stay apart.
func tag(f Families, i int) {
	name, val := "spate_endpoint", strconv.Itoa(i)
	for _, mf := range f {
		for _, m := range mf.GetMetric() {
			m.Label = append(m.Label, &dto.LabelPair{Name: &name, Value: &val})
		}
	}
}

// CheckEndpoint reports an endpoint that is not an http(s) URL.
func CheckEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("scrape URL %q: want http://host:port/metrics", scrub.URL(raw))
	}
	return nil
}
