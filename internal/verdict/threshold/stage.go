package threshold

// Intended maps the figures an open-loop stage's thresholds are judged on
// from the intended send time to those twins: what users felt, a late
// generator or a concurrency cap included.
var Intended = map[string]string{
	"ttft": "ttft_intended", "e2e": "e2e_intended",
	"goodput": "goodput_intended", "goodput_rps": "goodput_intended_rps",
}

// ForStage returns the thresholds that apply to the named stage: those
// without a stage selector and those that select it.
func ForStage(ts []Threshold, stage string) []Threshold {
	var out []Threshold
	for _, t := range ts {
		if t.Stage == "" || t.Stage == stage {
			out = append(out, t)
		}
	}
	return out
}

// EvalStage evaluates the thresholds that apply to a stage on its figures
// src, as a run judges them: in an open-loop stage (open) ttft, e2e and
// goodput from the intended send time (their Intended twins), unless
// fromSent. pass is false when any failed.
func EvalStage(ts []Threshold, stage string, open, fromSent bool, src Source) (outs []Outcome, pass bool) {
	outs, pass = make([]Outcome, 0, len(ts)), true
	for _, t := range ForStage(ts, stage) {
		from := ""
		if twin, ok := Intended[t.Metric]; ok && open && !fromSent {
			if t.Expr == "" {
				t.Expr = t.String()
			}
			t.Metric, from = twin, "intended"
		}
		o := t.Eval(src)
		o.From = from
		outs = append(outs, o)
		pass = pass && o.Pass
	}
	return outs, pass
}
