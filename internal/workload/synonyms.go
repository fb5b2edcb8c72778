package workload

import "slices"

// synonyms maps common words of user requests to words of the same meaning
// in context, for the synonym mutation: a small, conservative table (no
// word whose meaning turns on context), in both directions where that
// holds.
var synonyms = func() map[string][]string {
	groups := [][]string{
		{"explain", "describe", "clarify"},
		{"show", "display", "present"},
		{"tell", "inform"},
		{"give", "provide"},
		{"list", "enumerate"},
		{"big", "large", "huge"},
		{"small", "little", "tiny"},
		{"fast", "quick", "rapid"},
		{"slow", "sluggish"},
		{"help", "assist", "aid"},
		{"buy", "purchase"},
		{"start", "begin"},
		{"end", "finish"},
		{"make", "create"},
		{"find", "locate"},
		{"get", "obtain"},
		{"need", "require"},
		{"use", "utilize"},
		{"fix", "repair"},
		{"check", "verify"},
		{"change", "modify"},
		{"answer", "reply", "response"},
		{"question", "query"},
		{"problem", "issue"},
		{"error", "fault"},
		{"example", "instance", "sample"},
		{"compare", "contrast"},
		{"summarize", "summarise", "recap"},
		{"difference", "distinction"},
		{"important", "significant"},
		{"simple", "easy", "basic"},
		{"hard", "difficult"},
		{"correct", "accurate"},
		{"wrong", "incorrect"},
		{"cheap", "inexpensive"},
		{"please", "kindly"},
		{"maybe", "perhaps"},
		{"about", "regarding", "concerning"},
		{"also", "additionally"},
		{"usually", "typically", "generally"},
		{"quickly", "rapidly", "swiftly"},
		{"document", "file"},
		{"refund", "reimbursement"},
		{"cost", "price"},
		{"shipping", "delivery"},
	}
	m := map[string][]string{}
	for _, g := range groups {
		for _, w := range g {
			for _, alt := range g {
				if alt != w && !slices.Contains(m[w], alt) {
					m[w] = append(m[w], alt)
				}
			}
		}
	}
	return m
}()
