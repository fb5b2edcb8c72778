// Package flagbind binds command-line flags to the fields of an
// experiment: a table of Bindings (each a flag name, its usage and the
// field it sets) is registered with a pflag.FlagSet, and the flags the
// command line gave are then applied over an experiment read from a file,
// the load flags to every stage. It is the way in of the data flow, beside
// experiment.Load: flags → experiment → plan → ...
package flagbind

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/suggest"
)

// A Binding ties one flag to its field of the experiment. The flag's
// default is the field's value in the experiment given to Register; a flag
// given on the command line sets the field (of every stage, for a stage
// field) over a file's value (Flags.Apply).
type Binding struct {
	Name, Usage string
	// X returns the field in the experiment as a pointer; or S, in a stage
	// (the load flags, applied to every stage).
	X func(x *experiment.Experiment) any
	S func(s *experiment.Stage) any
	// Array makes a []string flag repeatable whole ('a,b' is one value)
	// rather than comma-separated.
	Array bool
	// Join adds the flag's values to the file's (thresholds, headers)
	// instead of replacing them.
	Join bool
	// Also runs after the flag is applied to a stage (the loop flags clear
	// the other loop's settings the command line does not give).
	Also func(s *experiment.Stage, changed func(string) bool)
	// Short is the one-letter shorthand, if any.
	Short string
	// Group, set alone (no Name), heads the flags after it in the table
	// in help (see Grouped): "Target", "Load", ...
	Group string
}

// field returns b's field in x, or in its stage s.
func (b Binding) field(x *experiment.Experiment, s *experiment.Stage) any {
	if b.S != nil {
		return b.S(s)
	}
	return b.X(x)
}

// Flags are the flags of a binding table registered with a flag set,
// parsed into Values (a scratch experiment holding the defaults, with one
// stage).
type Flags struct {
	table []Binding
	// Values holds the defaults, then the values the flags were given.
	Values *experiment.Experiment
}

// Register adds the table's flags to fs, with defaults' fields (and its
// first stage's) as the flags' defaults; a flag fs has already (a
// command's own) is left out.
func Register(fs *pflag.FlagSet, table []Binding, defaults *experiment.Experiment) *Flags {
	bf := &Flags{Values: defaults}
	vals := defaults
	group, order := "", 0
	for _, b := range table {
		if b.Name == "" {
			group, order = b.Group, order+1
			continue
		}
		if fs.Lookup(b.Name) != nil {
			continue
		}
		if group != "" {
			defer func(name, group string, order, at int) {
				_ = fs.SetAnnotation(name, groupKey, []string{group, strconv.Itoa(order), strconv.Itoa(at)})
			}(b.Name, group, order, len(bf.table))
		}
		bf.table = append(bf.table, b)
		n, sh, u := b.Name, b.Short, b.Usage
		switch p := b.field(vals, &vals.Stages[0]).(type) {
		case *string:
			fs.StringVarP(p, n, sh, *p, u)
		case *int:
			fs.IntVarP(p, n, sh, *p, u)
		case *float64:
			fs.Float64VarP(p, n, sh, *p, u)
		case *bool:
			fs.BoolVarP(p, n, sh, *p, u)
		case *time.Duration:
			fs.DurationVarP(p, n, sh, *p, u)
		case *[]string:
			if b.Array {
				fs.StringArrayVarP(p, n, sh, *p, u)
			} else {
				fs.StringSliceVarP(p, n, sh, *p, u)
			}
		case *[]int:
			fs.IntSliceVarP(p, n, sh, *p, u)
		case **bool:
			fs.VarPF(optional[bool]{p, strconv.ParseBool}, n, sh, u).NoOptDefVal = "true"
		case **int:
			fs.VarP(optional[int]{p, strconv.Atoi}, n, sh, u)
		case **uint64:
			fs.VarP(optional[uint64]{p, func(s string) (uint64, error) { return strconv.ParseUint(s, 0, 64) }}, n, sh, u)
		case **time.Duration:
			fs.VarP(optional[time.Duration]{p, time.ParseDuration}, n, sh, u)
		case *map[string]time.Duration:
			fs.VarP(sloValue{p}, n, sh, u)
		case *map[string]string:
			fs.VarP(headerValue{p}, n, sh, u)
		case *[]experiment.ThresholdSpec:
			fs.VarP(thresholdsValue{p}, n, sh, u)
		case *experiment.Limits:
			fs.VarP(&limitsValue{p: p}, n, sh, u)
		default:
			panic(fmt.Sprintf("flag --%s: no flag type for %T", n, p))
		}
	}
	return bf
}

// Apply sets the fields of x (of each of its stages, for a stage field)
// whose flags fs has given, in the table's order. A flag given zero where
// zero means the default is refused rather than read as the default.
func (bf *Flags) Apply(fs *pflag.FlagSet, x *experiment.Experiment) error {
	vals := bf.Values
	for _, b := range bf.table {
		if !fs.Changed(b.Name) {
			continue
		}
		src := reflect.ValueOf(b.field(vals, &vals.Stages[0])).Elem()
		if fl := fs.Lookup(b.Name); src.Kind() != reflect.Pointer && !b.Join && src.IsZero() && !strings.Contains(" 0 0s false [] ", " "+fl.DefValue+" ") {
			return fmt.Errorf("--%s %s: zero is not a value of this setting (default %s)", b.Name, fl.Value, fl.DefValue)
		}
		if negative(src) {
			return fmt.Errorf("--%s %s: a negative value is not a value of this setting", b.Name, fs.Lookup(b.Name).Value)
		}
		set := func(dst reflect.Value) {
			switch {
			case b.Join && src.Kind() == reflect.Slice:
				dst.Set(reflect.AppendSlice(dst, src))
			case b.Join && src.Kind() == reflect.Struct:
				// Only the fields the flag gave (--limit): the others keep
				// the file's values.
				for i := 0; i < src.NumField(); i++ {
					if !src.Field(i).IsZero() {
						dst.Field(i).Set(src.Field(i))
					}
				}
			case b.Join && src.Kind() == reflect.Map:
				if dst.IsNil() {
					dst.Set(reflect.MakeMap(dst.Type()))
				}
				for _, k := range src.MapKeys() {
					dst.SetMapIndex(k, src.MapIndex(k))
				}
			default:
				dst.Set(src)
			}
		}
		if b.S == nil {
			set(reflect.ValueOf(b.X(x)).Elem())
			continue
		}
		for i := range x.Stages {
			set(reflect.ValueOf(b.S(&x.Stages[i])).Elem())
			if b.Also != nil {
				b.Also(&x.Stages[i], fs.Changed)
			}
		}
	}
	return nil
}

// negative reports a negative number or duration (a pointer field's
// too): no setting of the tables takes one.
func negative(v reflect.Value) bool {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return v.Int() < 0
	case reflect.Float64:
		return v.Float() < 0
	}
	return false
}

// Loop is the Also of a load flag that puts a stage in one loop (rate,
// token-rate: open; concurrency: closed): it clears the file's settings of
// the other loops that the command line does not give too (--rate clears a
// file's concurrency and token rate; --concurrency also its cap).
func Loop(flag string) func(s *experiment.Stage, changed func(string) bool) {
	return func(s *experiment.Stage, changed func(string) bool) {
		clear := func(name string, f func()) {
			if name != flag && !changed(name) {
				f()
			}
		}
		clear("rate", func() { s.Rate = 0 })
		clear("token-rate", func() { s.TokenRate = 0 })
		clear("concurrency", func() { s.Concurrency = 0 })
		if flag == "concurrency" {
			clear("max-concurrency", func() { s.MaxConcurrency = 0 })
		}
	}
}

// optional is the flag of a pointer field, nil until the flag is given.
type optional[T any] struct {
	p     **T
	parse func(string) (T, error)
}

func (v optional[T]) Set(s string) error {
	x, err := v.parse(s)
	*v.p = &x
	return err
}

func (v optional[T]) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return fmt.Sprint(**v.p)
}

func (v optional[T]) Type() string {
	if t := fmt.Sprintf("%T", *new(T)); t != "time.Duration" {
		return t
	}
	return "duration"
}

// sloValue reads --slo ttft=500ms,tpot=50ms into the experiment's SLO map.
type sloValue struct{ p *map[string]time.Duration }

func (v sloValue) Set(s string) error {
	slo, err := metrics.ParseSLO(s)
	*v.p = map[string]time.Duration{}
	for k, ms := range slo.Millis() {
		(*v.p)[k] = time.Duration(ms * float64(time.Millisecond))
	}
	return err
}
func (v sloValue) String() string { return orNone(len(*v.p), *v.p) }

// orNone prints v, or "" when it has no elements (no default in the help).
func orNone(n int, v any) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(v)
}
func (v sloValue) Type() string { return "string" }

// headerValue reads repeated --header 'Name: value' into the target's
// headers.
type headerValue struct{ p *map[string]string }

func (v headerValue) Set(s string) error {
	k, val, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want 'Name: value'", s)
	}
	if strings.ContainsAny(s, "\r\n\x00") {
		return fmt.Errorf("%q: a header is one line: no CR, LF or NUL", s)
	}
	if *v.p == nil {
		*v.p = map[string]string{}
	}
	(*v.p)[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}
func (v headerValue) String() string { return orNone(len(*v.p), *v.p) }
func (v headerValue) Type() string   { return "stringArray" }

// thresholdsValue reads repeated --threshold EXPR into the experiment's
// thresholds.
type thresholdsValue struct{ p *[]experiment.ThresholdSpec }

func (v thresholdsValue) Set(s string) error {
	*v.p = append(*v.p, experiment.ThresholdSpec{Expr: s})
	return nil
}
func (v thresholdsValue) String() string { return orNone(len(*v.p), *v.p) }
func (v thresholdsValue) Type() string   { return "stringArray" }

// limitsValue reads repeated --limit KEY=VALUE,... into the experiment's
// limits. Its default shows the defaults; the first value given starts
// from zero, so that only the keys given replace a file's (Join).
// Limits is a flag value that sets *p from KEY=VALUE pairs (repeatable,
// or comma-separated), as --limit does (experiment.Limits.Set).
func Limits(p *experiment.Limits) pflag.Value { return &limitsValue{p: p} }

type limitsValue struct {
	p   *experiment.Limits
	set bool
}

func (v *limitsValue) Set(s string) error {
	if !v.set {
		*v.p, v.set = experiment.Limits{}, true
	}
	for _, kv := range strings.Split(s, ",") {
		if err := v.p.Set(kv); err != nil {
			return err
		}
	}
	return nil
}
func (v *limitsValue) String() string { return v.p.String() }
func (v *limitsValue) Type() string   { return "KEY=VALUE" }

// Suggest is "; did you mean --NAME?" when err is pflag's unknown flag and
// NAME, one of fs's visible flags, is within a typo of it, else "".
func Suggest(fs *pflag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if best := suggest.Closest(name, names); best != "" {
		return "; did you mean --" + best + "?"
	}
	return ""
}
