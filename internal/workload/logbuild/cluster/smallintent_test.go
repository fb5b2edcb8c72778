package cluster

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// smallIntentSizes are the planted topic sizes of the small-intent logs:
// seven topics and smallIntentNoise noise lines make 400 lines, so the
// smallest topic (20 lines) is exactly 5 % of the log.
var smallIntentSizes = []int{100, 80, 64, 50, 38, 28, 20}

const smallIntentNoise = 20

// newSmallIntentLog generates the small-intent log of seed: the seven
// topics of topicTemplates, with the sizes of smallIntentSizes rotated by
// the seed (topic t gets smallIntentSizes[(t+seed) mod 7], so seeds 1..7
// make each topic the 5 % one once), the same greetings, sign-offs,
// "asking for a friend", typos and capitals as newTopicLog, and
// smallIntentNoise noise lines.
func newSmallIntentLog(seed uint64) topicLog {
	sizes := make([]int, len(smallIntentSizes))
	for t := range sizes {
		sizes[t] = smallIntentSizes[(t+int(seed%uint64(len(sizes))))%len(sizes)]
	}
	return newTopicLog(sizes, smallIntentNoise, seed)
}

// distinctiveWords returns, for each topic of topicTemplates, the terms
// of its sentences and slot values that no other topic uses and that are
// not in the greetings, sign-offs, "asking for a friend" or noise lines.
func distinctiveWords() []map[string]bool {
	slot := regexp.MustCompile(`\{[a-z]+\}`)
	var words []map[string]bool
	uses := map[string]int{}
	for _, tt := range topicTemplates {
		w := map[string]bool{}
		add := func(s string) {
			for _, term := range textembed.Terms(s, false) {
				w[term] = true
			}
		}
		for _, s := range tt.sentences {
			add(slot.ReplaceAllString(s, " "))
		}
		for _, vals := range tt.slots {
			for _, v := range vals {
				add(v)
			}
		}
		for term := range w {
			uses[term]++
		}
		words = append(words, w)
	}
	shared := map[string]bool{}
	for term, n := range uses {
		if n > 1 {
			shared[term] = true
		}
	}
	for _, s := range slices.Concat(greetings, signoffs, friend, noise) {
		for _, term := range textembed.Terms(s, false) {
			shared[term] = true
		}
	}
	for _, w := range words {
		maps.DeleteFunc(w, func(term string, _ bool) bool { return shared[term] })
	}
	return words
}

// intentsKept checks the clustering of a small-intent log against the
// product requirement "a topic of ≥ 5 % of a log survives clustering, and
// clusters are named after their topic's distinctive words". A topic
// survives when some cluster holds more than half of the topic's lines
// and the topic's lines are more than half of that cluster. Every cluster
// is labelled by a distinctive word (distinctiveWords) of the topic that
// is most of its lines: a cluster with no topic at more than half of its
// lines, or named by boilerplate, by a word that two topics use or by a
// noise word, fails. It returns what fails ("" when nothing does) and,
// for the log's smallest topic, the recall and purity of the cluster it
// is the majority of (0, 0 when none).
func intentsKept(r *Result, l topicLog, sizes []int, distinct []map[string]bool) (bad string, recall, purity float64) {
	var fails []string
	smallest := slices.Index(sizes, slices.Min(sizes))
	survives := make([]bool, len(sizes))
	for _, c := range r.Clusters {
		count := map[int]int{}
		for _, i := range c.Members {
			count[l.truth[i]]++
		}
		maj, n := -1, 0
		for t, k := range count {
			if t >= 0 && 2*k > len(c.Members) {
				maj, n = t, k
			}
		}
		word := strings.SplitN(c.Label, "-", 2)[1]
		switch {
		case maj < 0:
			fails = append(fails, fmt.Sprintf("cluster %s (%d lines) has no topic at more than half its lines: %v", c.Label, len(c.Members), count))
			continue
		case !distinct[maj][word]:
			fails = append(fails, fmt.Sprintf("cluster %s is mostly %s but %q is not one of its distinctive words", c.Label, l.names[maj], word))
		}
		if 2*n > sizes[maj] {
			survives[maj] = true
			if maj == smallest {
				recall, purity = float64(n)/float64(sizes[maj]), float64(n)/float64(len(c.Members))
			}
		}
	}
	for t, ok := range survives {
		if !ok {
			fails = append(fails, fmt.Sprintf("topic %s (%d lines, %.1f %% of the log) has no cluster holding more than half of its lines as their majority", l.names[t], sizes[t], 100*float64(sizes[t])/float64(len(l.texts))))
		}
	}
	return strings.Join(fails, "; "), recall, purity
}

// TestSmallIntentsKept is the product requirement "workloads from logs
// keep small intents": on generated logs of seven planted topics of
// 100/80/64/50/38/28/20 queries and 20 noise lines (400 lines: the
// smallest topic is 5 % of the log), with the greetings, sign-offs,
// "asking for a friend", typos and capitals of TestTopicsNotBoilerplate,
// every topic survives --k auto (a cluster holds more than half of its
// lines, and they are more than half of that cluster) and every cluster
// is named by a distinctive word of its topic (see intentsKept). The
// sizes rotate with the seed, so that each of the seven topics is the
// 5 % one. The default suite clusters logs 7 and 8; -tags integration
// logs 1 to 30 (smallIntentLogs), and TestSmallIntentsKeptSweep counts
// the logs kept over a hundred.
//
// Logs 7 and 8 fail on average linkage alone (k = 6: the 5-7 % shipping
// topic is merged into billing, with which it shares "wrong", "shows",
// "never"; the templates of one topic, e.g. fitness's "how do I improve
// my form on squats at the gym", are as far from the rest of it on
// average linkage, 0.022 against 0.018 on log 7, so no k kept shipping
// and merged the template). They hold with the nearest-neighbour linkage
// (agglomerate) and the largest k of a nearly-largest gap. Log 17 failed
// on its label (billing named "card", which finance's "credit card debt"
// uses too) before the labels weighed a term's share of its weight in the
// cluster squared.
func TestSmallIntentsKept(t *testing.T) {
	distinct := distinctiveWords()
	for seed := uint64(1); seed <= smallIntentLogs; seed++ {
		t.Run(fmt.Sprint("log ", seed), func(t *testing.T) {
			if seed != 7 && seed != 8 {
				longtest.Skip(t)
			}
			r, l, sizes := buildSmallIntentLog(t, seed)
			bad, recall, purity := intentsKept(r, l, sizes, distinct)
			var labels []string
			for _, c := range r.Clusters {
				labels = append(labels, c.Label)
			}
			small := l.names[slices.Index(sizes, slices.Min(sizes))]
			t.Logf("k = %d, 5 %% topic %s: recall %.2f, purity %.2f; labels %v", r.K, small, recall, purity, labels)
			if bad != "" {
				t.Error(bad)
			}
		})
	}
}

// smallIntentLogs is the number of small-intent logs TestSmallIntentsKept
// clusters with -tags integration (seeds 1 to smallIntentLogs).
const smallIntentLogs = 30

// buildSmallIntentLog clusters the small-intent log of seed with k
// chosen, and returns the topic sizes.
func buildSmallIntentLog(t *testing.T, seed uint64) (*Result, topicLog, []int) {
	t.Helper()
	l := newSmallIntentLog(seed)
	sizes := make([]int, len(l.names))
	for _, tr := range l.truth {
		if tr >= 0 {
			sizes[tr]++
		}
	}
	loc := textembed.Local{}
	vecs, err := loc.Embed(context.Background(), l.texts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(context.Background(), l.texts, vecs, loc.Fit(l.texts), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r, l, sizes
}
