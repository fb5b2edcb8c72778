package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// Line is one line of the workload file, in spate's JSONL dataset format:
// the prompt (escaped by EscapeTemplate), its intent (the cluster label, so that spate run's
// per-intent breakdown works) and its labels ({"cluster": label}).
type Line struct {
	Prompt string            `json:"prompt"`
	Intent string            `json:"intent"`
	Labels map[string]string `json:"labels"`
	// Vars holds the original query of a mutated line ("original").
	Vars map[string]string `json:"vars,omitempty"`
}

// Lines returns the workload of a clustered log. Without weighted, each
// cluster contributes its representatives once (Samples per cluster, or
// fewer when it has fewer distinct queries). With weighted, the same
// number of lines in total (the sum of the representatives) is shared out
// by cluster size (largest remainder), each cluster cycling through its
// representatives, so the workload keeps the log's mix; a cluster whose
// share rounds to no line is left out. Either way the lines are shuffled
// with seed, so that any prefix of the file has the mix too.
func Lines(r *Result, weighted bool, seed uint64) []Line {
	counts := make([]int, len(r.Clusters))
	total := 0
	for i, c := range r.Clusters {
		counts[i] = len(c.Samples)
		total += counts[i]
	}
	if weighted {
		counts = apportion(r.Clusters, total)
	}
	var lines []Line
	for i, c := range r.Clusters {
		for j := 0; j < counts[i] && len(c.Samples) > 0; j++ {
			lines = append(lines, Line{Prompt: EscapeTemplate(c.Samples[j%len(c.Samples)]), Intent: c.Label, Labels: map[string]string{"cluster": c.Label}})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x11e5))
	rng.Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
	return lines
}

// EscapeTemplate makes a query safe as a dataset prompt: spate reads a
// prompt holding "{{" as a payload template, so each "{{" is written as the
// template action {{"{{"}}, which renders back to "{{".
func EscapeTemplate(s string) string {
	return strings.ReplaceAll(s, "{{", `{{"{{"}}`)
}

// apportion shares total lines out by cluster size by the largest
// remainder method: the counts sum to total exactly.
func apportion(cs []Cluster, total int) []int {
	size := 0
	for _, c := range cs {
		size += c.Size
	}
	counts := make([]int, len(cs))
	if size == 0 {
		return counts
	}
	rem := make([]float64, len(cs))
	given := 0
	for i, c := range cs {
		q := float64(total) * float64(c.Size) / float64(size)
		counts[i] = int(math.Floor(q))
		rem[i] = q - float64(counts[i])
		given += counts[i]
	}
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for _, i := range order[:total-given] {
		counts[i]++
	}
	return counts
}

// WriteLines writes the lines as JSONL.
func WriteLines(w io.Writer, lines []Line) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range lines {
		if err := enc.Encode(&lines[i]); err != nil {
			return fmt.Errorf("writing workload line %d: %w", i+1, err)
		}
	}
	return bw.Flush()
}
