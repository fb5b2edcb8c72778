package workload

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/capread"
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
// file size limit, and at once when the run is cancelled.
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
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := Build(experiment.Workload{Dataset: "/dev/zero"}, BuildOptions{Context: ctx, Limits: Limits{FileSize: 1 << 40}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
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
