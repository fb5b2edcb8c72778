package experiment

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"
)

// mayBeNegative are the yaml keys of numbers that take negative values
// (efSearch: -1 is an exact search).
var mayBeNegative = map[string]bool{"efSearch": true}

// valueProblems walks every field of e and reports the values no setting
// takes: negative durations and numbers, NaN and infinities, and header
// names or values with control characters (a CR or LF would split the
// request's headers).
func valueProblems(e *Experiment) []Problem {
	var ps []Problem
	var walk func(v reflect.Value, path, key string)
	walk = func(v reflect.Value, path, key string) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path, key)
			}
		case reflect.Struct:
			t := v.Type()
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				k := strings.Split(f.Tag.Get("yaml"), ",")[0]
				if !f.IsExported() || k == "-" || k == "" {
					continue
				}
				walk(v.Field(i), path+"."+k, k)
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), key)
			}
		case reflect.Map:
			if v.Type().Elem().Kind() == reflect.Interface {
				return // free-form (faults.set): the injector's to judge
			}
			keys := v.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
			for _, mk := range keys {
				walk(v.MapIndex(mk), path+"."+fmt.Sprint(mk), key)
			}
		case reflect.Int, reflect.Int64, reflect.Int32:
			if v.Int() < 0 && !mayBeNegative[key] {
				what := fmt.Sprint(v.Int())
				if v.Type() == reflect.TypeOf(time.Duration(0)) {
					what = time.Duration(v.Int()).String()
				}
				ps = append(ps, Problem{path, fmt.Sprintf("%s: %s is negative: give a value >= 0", key, what)})
			}
		case reflect.Float64:
			if f := v.Float(); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				ps = append(ps, Problem{path, fmt.Sprintf("%s: %v is not a number >= 0", key, f)})
			}
		}
	}
	walk(reflect.ValueOf(e).Elem(), "$", "")
	for name, val := range e.Target.Headers {
		if i := strings.IndexFunc(name+val, isControl); i >= 0 {
			ps = append(ps, Problem{"$.target.headers." + name, fmt.Sprintf("header %q has a control character (%q): a header is one line of printable text", name, (name + val)[i:i+1])})
		}
	}
	return ps
}

// isControl reports a control character other than a tab.
func isControl(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) }
