package report

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/result"
)

func TestSeriesCSVGolden(t *testing.T) {
	r := sample()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.Scenarios[0].StartedAt, r.Scenarios[0].DurationS = t0, 2
	r.Scenarios[0].Series = result.Series{
		SentPerS: []int{20, 21}, CompletedPerS: []int{0, 19}, ErrorsPerS: []int{0, 1}, InFlight: []int{20, 22},
		OutputTokens: []int64{0, 2432}, TTFTp50ms: []float64{80.5, 81}, TTFTp99ms: []float64{120, 121.25}, TTFTMeanMS: []float64{85, 86},
		E2Ep50ms: []float64{0, 1605}, E2Ep99ms: []float64{0, 1800.5}, E2EMeanMS: []float64{0, 1650},
	}
	// The second stage starts 2.5 s after the first; its series is short
	// of E2E figures (older result files).
	r.Scenarios[1].StartedAt = t0.Add(2500 * time.Millisecond)
	r.Scenarios[1].Series = result.Series{SentPerS: []int{80}, CompletedPerS: []int{60}, ErrorsPerS: []int{0}, InFlight: []int{32},
		OutputTokens: []int64{7680}, TTFTp50ms: []float64{300}, TTFTp99ms: []float64{450}, TTFTMeanMS: []float64{310}}
	var b bytes.Buffer
	if err := SeriesCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "series.csv.golden", b.Bytes())
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[3][0] != "peak" || rows[3][2] != "2.5" || rows[1][8] != "80.5" || rows[2][12] != "1800.5" || rows[1][11] != "" {
		t.Errorf("rows %q", rows)
	}
}

const recordsJSONL = `{"seq":1,"scenario":"main","intended_ms":0,"sent_ms":0.25,"ttft_ms":50.5,"e2e_ms":130,"tpot_ms":10,"itl_ms":[10,10,12,8],"input_tokens":32,"output_tokens":9,"output_source":"usage","status":200}
{"seq":2,"scenario":"main","warmup":true,"intended_ms":25,"sent_ms":25.125,"e2e_ms":3.5,"input_tokens":30,"output_tokens":0,"output_source":"none","status":500,"error":"http_500","error_message":"boom, \"quoted\"\nnext","intent":"=HYPERLINK(\"x\")"}

{"seq":3,"scenario":"peak","intended_ms":50,"sent_ms":51,"ttft_ms":49,"e2e_ms":129,"input_tokens":31,"output_tokens":1,"output_source":"tokenizer","future_field":[1,2]}
`

func TestRecordsCSVGolden(t *testing.T) {
	var b bytes.Buffer
	if err := RecordsCSV(&b, strings.NewReader(recordsJSONL), "req.jsonl"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "records.csv.golden", b.Bytes())
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// seq 1: lag 0.25 ms, 4 gaps of mean 10 and max 12.
	if len(rows) != 4 || rows[1][5] != "0.25" || rows[1][9] != "4" || rows[1][10] != "10" || rows[1][11] != "12" {
		t.Errorf("rows %q", rows)
	}
	// seq 2: no TTFT, the message with its comma, quote and newline intact.
	if rows[2][6] != "" || rows[2][17] != "boom, \"quoted\"\nnext" || rows[2][2] != "true" || rows[2][18] != `'=HYPERLINK("x")` {
		t.Errorf("row 2 %q", rows[2])
	}
}

func TestRecordsCSVErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"seq":1,"scenario":"a"}` + "\nnot json\n", "req.jsonl:2"},
		{`{"schema":"spate/result/v1"}` + "\n", "req.jsonl:1: no scenario field"},
	} {
		var b bytes.Buffer
		err := RecordsCSV(&b, strings.NewReader(c.in), "req.jsonl")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to name %q", c.in, err, c.want)
		}
	}
}

func FuzzParseRecordLine(f *testing.F) {
	for _, l := range strings.Split(recordsJSONL, "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"scenario":"x","itl_ms":null,"ttft_ms":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseRecordLine(b)
		if err != nil {
			return
		}
		row := recordRow(l)
		if len(row) != len(recordsHeader) {
			t.Fatalf("row of %d cells, header of %d", len(row), len(recordsHeader))
		}
		var out bytes.Buffer
		cw := csv.NewWriter(&out)
		if err := cw.Write(row); err != nil {
			t.Fatal(err)
		}
		cw.Flush()
		back, err := csv.NewReader(&out).Read()
		if err != nil || len(back) != len(row) {
			t.Fatalf("CSV row does not read back: %v", err)
		}
	})
}
