package headless

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	ok := `<body data-charts="2" data-rendered="2" data-errors="0"><div class="chart" id="a" data-rendered="1"></div>` +
		`<div class="chart" id="b" data-rendered="1" style="x"></div><pre id="spate-errors" hidden=""></pre></body>`
	for _, c := range []struct {
		name, dom, log string
		charts         int
		want           string // "" for no problem, else a part of one
	}{
		{"drawn", ok, "", 2, ""},
		{"one not drawn", strings.Replace(ok, `id="b" data-rendered="1"`, `id="b"`, 1), "", 2, "chart not drawn"},
		{"page error", strings.Replace(ok, `hidden=""></pre>`, `hidden="">error: boom</pre>`, 1), "", 2, "errors in the page: error: boom"},
		{"count", strings.Replace(ok, `data-rendered="2"`, `data-rendered="1"`, 1), "", 2, "body says"},
		{"log", ok, "Uncaught TypeError: x", 2, "uncaught"},
		{"no body", "<html></html>", "", 0, "no report body"},
	} {
		n, problems := Check(c.dom, c.log)
		if n != c.charts {
			t.Errorf("%s: %d charts, want %d", c.name, n, c.charts)
		}
		got := strings.Join(problems, "\n")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.want)
		}
	}
}
