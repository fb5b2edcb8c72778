package querylog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name, file, in string
		opt            Options
		want           []Query
		err            string // substring of the error, "" for none
	}{
		{name: "text", file: "log.txt", in: "\ufeffhow do I reset\n\n  refund please  \r\nlast", want: []Query{{"how do I reset", 1}, {"refund please", 3}, {"last", 4}}},
		{name: "text only blanks", file: "log.txt", in: "\n  \n", err: "no queries found"},
		{name: "jsonl by extension", file: "log.jsonl", in: `{"prompt":"a b"}` + "\n\n" + `{"prompt":"  c "}`, want: []Query{{"a b", 1}, {"c", 3}}},
		{name: "jsonl field", file: "log", opt: Options{Field: "q"}, in: `{"q":"x","prompt":"y"}`, want: []Query{{"x", 1}}},
		{name: "jsonl messages last user", file: "l.jsonl", opt: Options{Field: "messages"},
			in:   `{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"second"}]}`,
			want: []Query{{"second", 1}}},
		{name: "jsonl content parts", file: "l.jsonl", opt: Options{Field: "messages"},
			in:   `{"messages":[{"role":"user","content":[{"type":"text","text":"look at"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"this"}]}]}`,
			want: []Query{{"look at this", 1}}},
		{name: "jsonl no user", file: "l.jsonl", opt: Options{Field: "messages"}, in: `{"messages":[{"role":"system","content":"s"}]}`, err: `l.jsonl, line 1: field "messages": no message with role "user"`},
		{name: "jsonl missing field", file: "l.jsonl", in: "{\"prompt\":\"a\"}\n{\"text\":\"b\"}", err: `l.jsonl, line 2: no field "prompt"`},
		{name: "jsonl bad json", file: "l.jsonl", in: "{\"prompt\":\"a\"}\n\n{oops", err: "l.jsonl, line 3: not a JSON object"},
		{name: "jsonl number", file: "l.jsonl", in: `{"prompt":3}`, err: "want a string or an array of chat messages"},
		{name: "csv", file: "l.csv", in: "id,prompt\n1,hello there\n2,\"multi\nline\"\n3,\n4,bye", want: []Query{{"hello there", 2}, {"multi\nline", 3}, {"bye", 6}}},
		{name: "csv column", file: "l.txt", opt: Options{Column: "q"}, in: "\ufeffq,x\nfoo,1", want: []Query{{"foo", 2}}},
		{name: "csv missing column", file: "l.csv", in: "a,b\n1,2", err: `l.csv, line 1: no column "prompt"`},
		{name: "csv short record", file: "l.csv", in: "a,prompt\n1,x\n2", err: `l.csv, line 3: 1 fields`},
		{name: "csv empty", file: "l.csv", in: "", err: "empty CSV file"},
		{name: "csv bad quote", file: "l.csv", in: "prompt\n\"abc\n", err: "l.csv"},
		{name: "forced text on jsonl name", file: "l.jsonl", opt: Options{Format: Text}, in: `{"prompt":"a"}`, want: []Query{{`{"prompt":"a"}`, 1}}},
		{name: "bad format", file: "l", opt: Options{Format: "xml"}, in: "a", err: `log format "xml"`},
		{name: "over the size limit", file: "l.txt", opt: Options{MaxSize: 8}, in: "a\nb\nc\nd\ne\n", err: "query log l.txt is over the size limit of 8 bytes"},
		{name: "size limit exactly", file: "l.txt", opt: Options{MaxSize: 4}, in: "a\nb\n", want: []Query{{"a", 1}, {"b", 2}}},
		{name: "text line over the limit", file: "l.txt", in: "a\n" + strings.Repeat("x", maxLine+1), err: "l.txt, line 2: the line is over the line limit of 16 MiB"},
		{name: "jsonl line over the limit", file: "l.jsonl", in: strings.Repeat("x", maxLine+1), err: "l.jsonl, line 1: the line is over the line limit"},
		{name: "csv record over the limit", file: "l.csv", in: "prompt\n" + strings.Repeat("x", maxLine+1), err: "l.csv, line 2: the record is over the line limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tt.in), tt.file, tt.opt)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestHostileCSV: a CSV log whose quote never closes, or whose header
// never ends, is refused at the record limit (16 MiB): encoding/csv read
// the rest of the file, up to the 1 GiB size limit, as one record.
func TestHostileCSV(t *testing.T) {
	for _, tc := range []struct{ name, head, want string }{
		{"a quote never closed", "prompt\n\"", "l.csv, line 2: the record is over the line limit of 16 MiB"},
		{"a header without a line end", "prompt", "l.csv, line 1: the header is over the line limit of 16 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 256 MiB that takes no disk: the head, then zero bytes.
			p := filepath.Join(t.TempDir(), "l.csv")
			if err := os.WriteFile(p, []byte(tc.head), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 256<<20); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ReadFile(p, Options{})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %.300v, want %q", err, tc.want)
			}
			// encoding/csv grows its buffers through the 16 MiB it
			// reads: 130 MiB allocated in all, a fraction held at once.
			if n := after.TotalAlloc - before.TotalAlloc; n > 192<<20 {
				t.Errorf("allocated %d MiB, over 192 MiB", n>>20)
			}
		})
	}
}

// TestEndlessLog reads /dev/zero: the read stops at the size limit, and
// at once when cancelled.
func TestEndlessLog(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip("no /dev/zero")
	}
	defer f.Close()
	if _, err := Read(f, "zero.csv", Options{MaxSize: 1 << 20}); err == nil || !strings.Contains(err.Error(), "over the size limit of 1 MiB") {
		t.Errorf("csv: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(f, "zero.csv", Options{Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// FuzzRead checks that no input makes a reader panic and that every query
// it returns is trimmed, non-empty and has a positive line.
func FuzzRead(f *testing.F) {
	f.Add("a\nb\n", "log.txt", "")
	f.Add(`{"prompt":"x"}`, "log.jsonl", "prompt")
	f.Add(`{"messages":[{"role":"user","content":[{"type":"text","text":"t"}]}]}`, "log.jsonl", "messages")
	f.Add("prompt,b\n\"x\",1\n", "log.csv", "")
	f.Fuzz(func(t *testing.T, in, file, field string) {
		for _, o := range []Options{{}, {Field: field}, {Column: field}} {
			qs, err := Read(strings.NewReader(in), file, o)
			if err != nil {
				continue
			}
			for _, q := range qs {
				if q.Text == "" || q.Text != strings.TrimSpace(q.Text) || q.Line < 1 {
					t.Fatalf("bad query %+v", q)
				}
			}
		}
	})
}
