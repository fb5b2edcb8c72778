package yamlkeys

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

type inner struct {
	Duration time.Duration `yaml:"duration"`
	Rate     float64       `yaml:"rate"`
}

type embedded struct {
	Shared string `yaml:"shared"`
}

type doc struct {
	embedded `yaml:",inline"`
	Name     string            `yaml:"name"`
	Stages   []inner           `yaml:"stages"`
	ByName   map[string]*inner `yaml:"byName"`
	Free     map[string]any    `yaml:"free"`
	Untagged int
	Skipped  int `yaml:"-"`
}

func TestFind(t *testing.T) {
	data := []byte(`name: x
shared: s
untagged: 1
nmae: y
stages:
  - {rate: 1, duraton: 1s}
  - rate: 2
    rat: 3
byName:
  a: {durration: 1s}
free: {anything: 1, goes: {here: 2}}
Skipped: 1
`)
	var got []string
	for _, u := range Find(data, reflect.TypeFor[doc]()) {
		got = append(got, fmt.Sprintf("%d:%d %s→%s", u.Line, u.Column, u.Key, u.Nearest))
	}
	want := []string{"4:1 nmae→name", "6:15 duraton→duration", "8:5 rat→rate", "10:7 durration→duration", "12:1 Skipped→"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknown keys %q, want %q", got, want)
	}
	if u := Find([]byte("{a: [1,"), reflect.TypeFor[doc]()); u != nil {
		t.Errorf("YAML that does not parse: %v, want none", u)
	}
}

// FuzzFind: any bytes, no panic (in Find or SectionErrors), and every key
// found is at a place in the file.
func FuzzFind(f *testing.F) {
	f.Add([]byte("name: x\nstages: [{rate: 1, duraton: 1s}]\n"))
	f.Add([]byte("a: &x {nmae: 1}\nbyName: {k: *x}\n<<: {y: 1}\n"))
	f.Add([]byte("stages: ! \nfree: !!map {a: 1}\n---\nnmae: 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		for _, u := range Find(data, reflect.TypeFor[doc]()) {
			if u.Line < 1 || u.Column < 1 {
				t.Fatalf("%q: key %q at %d:%d", data, u.Key, u.Line, u.Column)
			}
		}
		for _, err := range SectionErrors(data, reflect.TypeFor[doc]()) {
			if err == nil {
				t.Fatalf("%q: a nil section error", data)
			}
		}
	})
}
