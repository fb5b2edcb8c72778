//go:build integration

package htmlreport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/output/htmlreport/headless"
	"github.com/spate-dev/spate/result"
)

// TestChromiumDrawsEveryKindOfChart opens an overlay of two synthetic
// results — with server metrics, a breakdown and hostile strings — in
// headless Chromium with the network blocked: every chart is drawn, the
// page caught no error, and no injected element exists.
func TestChromiumDrawsEveryKindOfChart(t *testing.T) {
	chromium, ok := headless.Find()
	if !ok {
		t.Skip(headless.SkipMessage)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(f, []*result.Result{sample(t), sample(t)}, Options{Labels: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	charts, problems, dom, err := headless.Open(ctx, chromium, page, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if charts != 14 {
		t.Errorf("%d charts, want 14", charts)
	}
	// The hostile stage name is shown as text, never parsed into an element.
	if strings.Contains(dom, `<img src="x"`) || !strings.Contains(dom, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("a stage name became an element, or is not shown: the page is open to injection")
	}
}
