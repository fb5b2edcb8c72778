package textembed

import (
	"fmt"
	"testing"
)

// TestBoilerplatePhrases checks the phrase rule: a phrase that is the whole
// of its lines ("cancel my subscription") is their topic and keeps its
// weight, while a phrase beside other content ("asking for a friend") is
// boilerplate, though the words of each always come together.
func TestBoilerplatePhrases(t *testing.T) {
	cancel := []string{"how do I cancel my subscription", "cancel subscription please", "I want to cancel my subscription", "please cancel the subscription now", "cancel subscription"}
	reset := []string{"reset my password", "how do I reset the password", "password reset please", "I need a password reset", "reset password now"}
	var texts []string
	for i := range 40 {
		q := cancel[i%len(cancel)]
		if i%2 == 1 {
			q = reset[i%len(reset)]
		}
		if i%4 < 2 {
			q += ", asking for a friend"
		}
		texts = append(texts, fmt.Sprintf("%s %d", q, 1000+i))
	}
	m := Local{}.Fit(texts)
	w := map[string]TermWeight{}
	for _, tw := range m.Boilerplate() {
		w[tw.Term] = tw
	}
	for _, topic := range []string{"cancel", "subscription", "reset", "password"} {
		if tw, ok := w[topic]; !ok || tw.Weight < 0.8 {
			t.Errorf("topic word %q: %+v (judged %v), want weight ≥ 0.8 (two topics: a lift near 2)", topic, tw, ok)
		}
	}
	for _, b := range []string{"asking", "friend"} {
		if tw, ok := w[b]; !ok || tw.Weight > 0.1 {
			t.Errorf("boilerplate %q: %+v (judged %v), want weight ≤ 0.1", b, tw, ok)
		}
	}
	// Too few lines to learn from: nothing is judged.
	if b := (Local{}).Fit(texts[:MinBoilerplateLog-1]).Boilerplate(); len(b) != 0 {
		t.Errorf("%d lines: boilerplate %v, want none learnt", MinBoilerplateLog-1, b)
	}
	if b := (Local{KeepBoilerplate: true}).Fit(texts).Boilerplate(); len(b) != 0 {
		t.Errorf("KeepBoilerplate: boilerplate %v, want none learnt", b)
	}
}
