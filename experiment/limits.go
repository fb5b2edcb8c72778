package experiment

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Limits bound what a run keeps of what a server sends and what it reads
// from files, so that a hostile server or a careless file cannot take the
// machine's memory: over a response limit the request fails with error
// kind too_large, over a file limit the run does not start. A zero field
// means its default (docs/run.md lists them); --limit KEY=VALUE sets one.
type Limits struct {
	// ResponseText is the text of one response spate keeps (answer,
	// reasoning and tool calls, for the tokenizer and answer checks).
	ResponseText Size `yaml:"responseText"`
	// ResponseBody is the body of one non-streamed response.
	ResponseBody Size `yaml:"responseBody"`
	// ModelID is the model id a response names.
	ModelID Size `yaml:"modelId"`
	// ModelList is the body of the server's /v1/models listing.
	ModelList Size `yaml:"modelList"`
	// PromptTokens is the length of one synthetic prompt, shared prefix or
	// system prompt, in tokens.
	PromptTokens int `yaml:"promptTokens"`
	// FileSize is the size of a file spate reads: datasets, length files,
	// query logs, images.
	FileSize Size `yaml:"fileSize"`
	// LineSize is one line of a line-based file (JSONL, CSV).
	LineSize Size `yaml:"lineSize"`
	// FaultSetNodes is the number of values (after YAML aliases are
	// expanded) in a stage's faults.set.
	FaultSetNodes int `yaml:"faultSetNodes"`
}

// limitKeys are the keys of Limits, as YAML and --limit spell them.
var limitKeys = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(Limits{})
	for i := 0; i < t.NumField(); i++ {
		m[t.Field(i).Tag.Get("yaml")] = i
	}
	return m
}()

// LimitKeys lists the keys of Limits, sorted.
func LimitKeys() []string {
	keys := make([]string, 0, len(limitKeys))
	for k := range limitKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Set sets one limit by its key ("responseText=8MiB"); sizes take the
// units of ParseSize, counts are integers.
func (l *Limits) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	i, known := limitKeys[strings.TrimSpace(k)]
	if !ok || !known {
		return fmt.Errorf("%q: want KEY=VALUE with KEY one of %s", kv, strings.Join(LimitKeys(), ", "))
	}
	f := reflect.ValueOf(l).Elem().Field(i)
	if f.Type() == reflect.TypeOf(Size(0)) {
		s, err := ParseSize(v)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if s <= 0 {
			return fmt.Errorf("%s: want a size > 0", k)
		}
		f.SetInt(int64(s))
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return fmt.Errorf("%s: %q: want a count > 0", k, v)
	}
	f.SetInt(int64(n))
	return nil
}

// String writes the limits that are set as key=value,... in key order.
func (l Limits) String() string {
	var parts []string
	v := reflect.ValueOf(l)
	for _, k := range LimitKeys() {
		f := v.Field(limitKeys[k])
		if f.IsZero() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, f.Interface()))
	}
	return strings.Join(parts, ",")
}

// Or returns l with each zero field taken from d.
func (l Limits) Or(d Limits) Limits {
	v, dv := reflect.ValueOf(&l).Elem(), reflect.ValueOf(d)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			v.Field(i).Set(dv.Field(i))
		}
	}
	return l
}

// Size is a number of bytes, written as an integer or with a unit: B, KiB,
// MiB, GiB (powers of 1024) or KB, MB, GB (of 1000), e.g. 64MiB.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseSize reads a Size: "1048576", "1MiB", "1.5GB".
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsNaN(f) || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q: want bytes, e.g. 65536, 64KiB, 16MiB or 1GiB", s)
	}
	return Size(f * mult), nil
}

// String writes the size in the largest binary unit that divides it.
func (s Size) String() string {
	for _, u := range []struct {
		suffix string
		n      Size
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s >= u.n && s%u.n == 0 {
			return strconv.FormatInt(int64(s/u.n), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// UnmarshalYAML reads a size written as a number or a string with a unit.
func (s *Size) UnmarshalYAML(unmarshal func(any) error) error {
	var n int64
	if err := unmarshal(&n); err == nil {
		if n < 0 {
			return fmt.Errorf("size %d: want bytes >= 0", n)
		}
		*s = Size(n)
		return nil
	}
	var str string
	if err := unmarshal(&str); err != nil {
		return err
	}
	v, err := ParseSize(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalYAML writes the size with its unit.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }
