// Package headless opens a report page in headless Chromium with the
// network blocked and reads back what the page drew: the end-to-end check
// of the HTML report (see htmlreport's assets/report.js, which marks each
// drawn chart and collects the page's errors).
//
// Test support for the outputs stage.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package headless

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Find returns the Chromium binary: $SPATE_CHROMIUM, else chromium,
// chromium-browser or google-chrome on PATH (Debian's chromium package,
// which .ci/setup.d/chromium.sh installs).
func Find() (string, bool) {
	if p := os.Getenv("SPATE_CHROMIUM"); p != "" {
		return p, true
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, true
		}
	}
	return "", false
}

// SkipMessage is what a test says when Find finds nothing.
const SkipMessage = "headless Chromium not found: install it with .ci/setup.d/chromium.sh (Debian package chromium), or set SPATE_CHROMIUM"

// DumpDOM loads the file page in headless Chromium, with every network
// connection failing and every host name unknown, lets it run for 10 s
// of virtual time, and returns the DOM it ends with and Chromium's log.
// profile is an empty directory for Chromium's profile.
func DumpDOM(ctx context.Context, chromium, page, profile string) (dom, log string, err error) {
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir="+profile,
		"--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--virtual-time-budget=10000", "--dump-dom", "file://"+page)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", errOut.String(), fmt.Errorf("running %s on %s: %w", chromium, page, err)
	}
	return out.String(), errOut.String(), nil
}

var (
	chartDiv  = regexp.MustCompile(`<div class="chart"[^>]*>`)
	bodyTag   = regexp.MustCompile(`<body data-charts="(\d+)"[^>]*>`)
	errorsPre = regexp.MustCompile(`(?s)<pre id="spate-errors"[^>]*>(.*?)</pre>`)
)

// Check reads a report's DOM after Chromium ran it and returns how many
// charts the page has and what is wrong: a chart ECharts did not finish
// drawing with all its series, an error the page caught (window errors,
// unhandled rejections, console.error), or an uncaught error in the log.
func Check(dom, log string) (charts int, problems []string) {
	m := bodyTag.FindStringSubmatch(dom)
	if m == nil {
		return 0, []string{"no report body in the DOM"}
	}
	charts, _ = strconv.Atoi(m[1])
	divs := chartDiv.FindAllString(dom, -1)
	drawn := 0
	for _, d := range divs {
		if strings.Contains(d, `data-rendered="1"`) {
			drawn++
		} else {
			problems = append(problems, "chart not drawn: "+d)
		}
	}
	if len(divs) != charts || drawn != charts {
		problems = append(problems, fmt.Sprintf("%d chart containers, %d drawn, the page says %d", len(divs), drawn, charts))
	}
	if !strings.Contains(m[0], `data-rendered="`+m[1]+`"`) || !strings.Contains(m[0], `data-errors="0"`) {
		problems = append(problems, "body says "+m[0])
	}
	if e := errorsPre.FindStringSubmatch(dom); e == nil {
		problems = append(problems, "no #spate-errors in the DOM")
	} else if s := strings.TrimSpace(e[1]); s != "" {
		problems = append(problems, "errors in the page: "+s)
	}
	if strings.Contains(log, "Uncaught") {
		problems = append(problems, "Chromium logged an uncaught error: "+log)
	}
	return charts, problems
}

// Open runs a report page in Chromium (DumpDOM) and checks what it drew
// (Check).
func Open(ctx context.Context, chromium, page, profile string) (charts int, problems []string, dom string, err error) {
	dom, log, err := DumpDOM(ctx, chromium, page, profile)
	if err != nil {
		return 0, nil, "", fmt.Errorf("%w\n%s", err, log)
	}
	charts, problems = Check(dom, log)
	return charts, problems, dom, nil
}
