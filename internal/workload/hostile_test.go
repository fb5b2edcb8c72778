package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

// TestHostileFiles: files that crashed, hung or ate memory are errors
// that name the file, the line or the limit.
func TestHostileFiles(t *testing.T) {
	small := Limits{FileSize: 4 << 10, LineSize: 64}
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name, file, body string
		lim              Limits
		want             string
	}{
		// This panicked: FieldPos(0) was called before the read error
		// was checked.
		{"csv unterminated quote", "d.csv", "prompt\n\"never closed\n", Limits{}, `extraneous or missing " in quoted-field`},
		{"csv unterminated quote after a row", "d.csv", "prompt\nok\n\"a\"b\n", Limits{}, `line 3`},
		{"csv long line", "d.csv", "prompt\n" + long + "\n", small, "line 2: the line is over the lineSize limit of 64 bytes"},
		{"jsonl long line", "d.jsonl", `{"prompt":"` + long + `"}` + "\n", small, "line 1: the line is over the lineSize limit"},
		{"sharegpt long line", "d.jsonl", `{"conversations":[{"from":"human","value":"` + long + `"}]}` + "\n", small, "line 1: the line is over the lineSize limit"},
		{"batch long line", "d.jsonl", `{"custom_id":"1","body":{"prompt":"` + long + `"}}` + "\n", small, "line 1: the line is over the lineSize limit"},
		// These were read whole before the line was found too long.
		{"csv quoted field over lines", "d.csv", "prompt\n\"" + strings.Repeat("x\n", 100) + "\"\n", small, "line 2: the line is over the lineSize limit of 64 bytes"},
		{"csv header without line ends", "d.csv", long, small, "line 1: the line is over the lineSize limit of 64 bytes"},
		{"jsonl without line ends", "d.jsonl", `{"prompt":"` + long, small, "line 1: the line is over the lineSize limit"},
		{"mooncake without line ends", "d.jsonl", `{"input_length":1,"hash_ids":[` + long, small, "line 1: the line is over the lineSize limit"},
		{"file over the limit", "d.jsonl", strings.Repeat(`{"prompt":"a"}`+"\n", 400), small, "is over the fileSize limit of 4 KiB"},
		// The error quoted the whole header, up to the lineSize limit
		// (64 MiB by default), escape codes and all.
		{"csv header without the column", "d.csv", "\x1b[2J" + strings.Repeat("col,", 50_000) + "x\nrow\n", Limits{}, `no "prompt" column in the header "\x1b[2Jcol,col,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, tc.file, tc.body)
			_, err := Build(experiment.Workload{Dataset: p}, BuildOptions{Limits: tc.lim})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %.500v\nwant one naming %s and %q", err, p, tc.want)
			}
			if n := len(err.Error()); n > 1000 {
				t.Errorf("an error of %d bytes: %.300s...", n, err)
			}
		})
	}
}

// TestEndlessDataset reads /dev/zero as a dataset: the read ends at the
// file size limit (see TestEndlessDatasetCancelled for the run's end).
func TestEndlessDataset(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, format := range []string{FormatJSONL, FormatShareGPT, FormatCSV} {
		_, err := LoadFormat("/dev/zero", LoadOptions{Format: format, Limits: Limits{FileSize: 8 << 20}})
		if !errors.Is(err, capread.ErrTooLarge) {
			t.Errorf("%s: %v", format, err)
		}
	}
}

// TestPromptLimit: a synthetic prompt over the limit is refused before it
// is made (--input-tokens 1e8 took 3.76 GB for one request); a normal
// distribution's tail is clipped.
func TestPromptLimit(t *testing.T) {
	for _, tc := range []struct {
		w    experiment.Workload
		want string
	}{
		{experiment.Workload{InputTokens: "1e8"}, "inputTokens 1e8: 100000000 tokens is over the promptTokens limit of 2000000"},
		{experiment.Workload{InputTokens: "uniform:1:3000000"}, "3000000 tokens is over"},
		{experiment.Workload{InputTokens: "choice:10@1,5000000@1"}, "5000000 tokens is over"},
		{experiment.Workload{SystemPrompt: &experiment.Text{Tokens: 3e6}}, "systemPrompt.tokens 3000000 is over"},
		{experiment.Workload{SharedPrefix: &experiment.SharedPrefix{Groups: 1, Tokens: 3e6, Ratio: 1}}, "sharedPrefix.tokens 3000000 is over"},
		{experiment.Workload{Turns: &experiment.Turns{Count: "2", TurnTokens: "1e9"}}, "turns.turnTokens 1e9"},
		{experiment.Workload{Intents: []experiment.Intent{{Name: "a", Weight: 1, InputTokens: "1e7"}}}, "inputTokens 1e7"},
	} {
		_, err := Build(tc.w, BuildOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--limit promptTokens") {
			t.Errorf("%+v: error %v, want %q", tc.w, err, tc.want)
		}
	}
	b, err := Build(experiment.Workload{InputTokens: "50:1000"}, BuildOptions{Limits: Limits{PromptTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for n := uint64(0); n < 200; n++ {
		r, err := b.Source.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		if r.InputTokens > 100 || len(strings.Fields(r.Prompt)) > 100 {
			t.Fatalf("request %d: %d tokens over the limit of 100", n, r.InputTokens)
		}
	}
}

// cancellingCounter counts words and cancels its run at its first count.
type cancellingCounter struct {
	cancel context.CancelFunc
	counts *int
}

func (c cancellingCounter) Count(s string) int {
	*c.counts++
	c.cancel()
	return len(strings.Fields(s))
}

// TestShareGPTCountStops: counting a ShareGPT file's replies stops when
// the run is cancelled (the replies of a 1 GiB file take minutes).
func TestShareGPTCountStops(t *testing.T) {
	var b strings.Builder
	for range 1000 {
		b.WriteString(`{"conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"a b c"}]}` + "\n")
	}
	p := write(t, "d.jsonl", b.String())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counts := 0
	_, err := LoadFormat(p, LoadOptions{Format: FormatShareGPT, Tokenizer: cancellingCounter{cancel, &counts}, Context: ctx})
	if !errors.Is(err, context.Canceled) || counts != 1 {
		t.Fatalf("error %v after %d counts, want cancelled after 1", err, counts)
	}
}

// sparse makes a file of size zero bytes (no line end) that takes no disk.
func sparse(t *testing.T, name string, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return p
}

// quotedField makes a CSV file whose second record is one quoted field
// of size bytes in short lines.
func quotedField(t *testing.T, size int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "d.csv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := strings.Repeat(strings.Repeat("x", 63)+"\n", 1<<14) // 1 MiB
	f.WriteString("prompt\n\"")
	for range size / len(chunk) {
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.WriteString("\"\n")
	return p
}

// TestHostileDatasetMemory: a dataset with a line (or CSV record) over the
// lineSize limit is refused having read little more than the limit. Each
// was read whole first: a 1 GiB sparse file as CSV ended in a fatal out of
// memory at 5.7 GB, a 200 MB quoted CSV field took 1.4 GB, and a JSONL or
// ShareGPT file without line ends was read to the 1 GiB file limit (2.1 GB,
// 15 s) before the line was found too long.
func TestHostileDatasetMemory(t *testing.T) {
	// The tokenizers TestMain loads would count in the bytes allocated.
	for _, name := range []string{"llama3", "o200k_base", "cl100k_base"} {
		if _, err := tokenizer.Load(name); err != nil {
			t.Fatal(err)
		}
	}
	mib := Limits{LineSize: 1 << 20}
	for _, tc := range []struct {
		name   string
		file   func(t *testing.T) string
		format string
		lim    Limits
		want   string
		bound  uint64 // bytes allocated
	}{
		{"csv without line ends", func(t *testing.T) string { return sparse(t, "d.csv", 512<<20) }, "", mib, "line 1: the line is over the lineSize limit of 1 MiB", 32 << 20},
		{"csv quoted field over lines", func(t *testing.T) string { return quotedField(t, 32<<20) }, "", mib, "line 2: the line is over the lineSize limit of 1 MiB", 32 << 20},
		{"jsonl without line ends", func(t *testing.T) string { return sparse(t, "d.jsonl", 512<<20) }, "", mib, "line 1: the line is over the lineSize limit of 1 MiB", 32 << 20},
		{"sharegpt without line ends", func(t *testing.T) string { return sparse(t, "d.json", 512<<20) }, FormatShareGPT, mib, "line 1: the line is over the lineSize limit of 1 MiB", 32 << 20},
		{"batch without line ends", func(t *testing.T) string { return sparse(t, "d.jsonl", 512<<20) }, FormatBatch, mib, "line 1: the line is over the lineSize limit of 1 MiB", 32 << 20},
		{"mooncake without line ends", func(t *testing.T) string { return sparse(t, "d.jsonl", 512<<20) }, FormatMooncake, mib, "line 1: the line is over the lineSize limit of 1 MiB", 32 << 20},
		// With the default limits: the 64 MiB read (io.ReadAll took five
		// times that, growing its buffer).
		{"1 GiB csv, default limits", func(t *testing.T) string { return sparse(t, "d.csv", 1<<30) }, "", Limits{}, "line 1: the line is over the lineSize limit of 64 MiB", 96 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.file(t)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := LoadFormat(p, LoadOptions{Format: tc.format, Limits: tc.lim})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), "dataset "+p+", "+tc.want) {
				t.Errorf("error %.300v, want %q", err, tc.want)
			}
			n := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d MiB", n>>20)
			if n > tc.bound {
				t.Errorf("allocated %d MiB, over %d MiB", n>>20, tc.bound>>20)
			}
		})
	}
}
