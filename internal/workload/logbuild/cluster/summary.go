package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// Summary describes a built workload: how the log was clustered and what
// each cluster holds. It is written as JSON beside the workload.
type Summary struct {
	Log       string `json:"log"`
	Queries   int    `json:"queries"`
	Embedding string `json:"embedding"`
	Seed      uint64 `json:"seed"`
	K         int    `json:"k"`
	// KChosenBy is "given", "nearest to the given", "linkage gap", "one
	// topic" or "distinct points".
	KChosenBy string `json:"k_chosen_by"`
	// MinSize is the size floor of a cluster.
	MinSize int `json:"min_size"`
	// Boilerplate are the terms learnt as boilerplate (weight below 1),
	// least topical first; empty with --keep-boilerplate or a remote
	// embedding.
	Boilerplate []string `json:"boilerplate,omitempty"`
	// Unclustered is the bucket of queries in no cluster.
	Unclustered UnclusteredSummary `json:"unclustered"`
	// Silhouette is the mean silhouette (cosine distance) of the clustering
	// kept, computed on SilhouetteSampled queries.
	Silhouette float64 `json:"silhouette"`
	// SilhouetteCI95 is the half-width of its 95 % interval.
	SilhouetteCI95    float64          `json:"silhouette_ci95"`
	SilhouetteSampled int              `json:"silhouette_sampled"`
	Scores            []KScore         `json:"scores"`
	Workload          string           `json:"workload"`
	Weighted          bool             `json:"weighted"`
	Lines             int              `json:"lines"`
	Clusters          []ClusterSummary `json:"clusters"`
	Warnings          []string         `json:"warnings,omitempty"`
}

// UnclusteredSummary is the unclustered bucket of a Summary: its size, by
// reason (see Unclustered), and a few of its queries.
type UnclusteredSummary struct {
	Size        int      `json:"size"`
	Empty       int      `json:"empty"`
	Boilerplate int      `json:"boilerplate"`
	Lonely      int      `json:"lonely"`
	Outliers    int      `json:"outliers"`
	Examples    []string `json:"examples,omitempty"`
}

// ClusterSummary is one cluster of a Summary.
type ClusterSummary struct {
	Label    string   `json:"label"`
	Size     int      `json:"size"`
	Share    float64  `json:"share"`
	TopTerms []string `json:"top_terms"`
	Example  string   `json:"example"`
	Samples  int      `json:"samples"` // distinct representatives kept
	Lines    int      `json:"lines"`   // lines of the workload from it
}

// Summarize builds the Summary of r and the workload lines written from
// it; texts are the log's queries (for the unclustered examples) and
// boilerplate the terms learnt as boilerplate.
func Summarize(r *Result, texts []string, boilerplate []textembed.TermWeight, lines []Line, log, embedding, workload string, weighted bool, seed uint64) *Summary {
	s := &Summary{Log: log, Queries: r.Queries, Embedding: embedding, Seed: seed,
		K: r.K, KChosenBy: r.KChosenBy, MinSize: r.MinSize, SilhouetteSampled: r.SilhouetteSampled, Scores: r.Scores,
		Silhouette: r.Silhouette, SilhouetteCI95: r.SilhouetteCI95,
		Workload: workload, Weighted: weighted, Lines: len(lines), Warnings: r.Warnings}
	for _, tw := range boilerplate {
		if tw.Weight < 1 {
			s.Boilerplate = append(s.Boilerplate, tw.Term)
		}
	}
	u := r.Unclustered
	s.Unclustered = UnclusteredSummary{Size: u.Len(), Empty: u.Empty, Boilerplate: u.Boilerplate, Lonely: u.Lonely, Outliers: u.Outliers}
	seen := map[string]bool{}
	for _, i := range u.Members {
		if i < len(texts) && !seen[texts[i]] && len(s.Unclustered.Examples) < 5 {
			seen[texts[i]] = true
			s.Unclustered.Examples = append(s.Unclustered.Examples, texts[i])
		}
	}
	perLabel := map[string]int{}
	for _, l := range lines {
		perLabel[l.Intent]++
	}
	for _, c := range r.Clusters {
		cs := ClusterSummary{Label: c.Label, Size: c.Size, Share: c.Share, TopTerms: c.TopTerms, Samples: len(c.Samples), Lines: perLabel[c.Label]}
		if len(c.Samples) > 0 {
			cs.Example = c.Samples[0]
		}
		s.Clusters = append(s.Clusters, cs)
	}
	return s
}

// WriteJSON writes the summary as indented JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// WriteTable prints the summary as a table: a header line, one row per
// cluster (label, size, share, top terms, example), then any warnings.
func (s *Summary) WriteTable(w io.Writer) error {
	var b strings.Builder
	how := s.KChosenBy
	if s.KChosenBy == "linkage gap" && len(s.Scores) > 0 {
		how = fmt.Sprintf("by the largest linkage gap over k = %d..%d", s.Scores[0].K, s.Scores[len(s.Scores)-1].K)
	}
	fmt.Fprintf(&b, "%d queries, %d clusters of at least %d (k %s; silhouette %.3f ± %.3f), %s\n", s.Queries, s.K, s.MinSize, how, s.Silhouette, s.SilhouetteCI95, s.Embedding)
	labelW, termsW := len("unclustered"), len("top terms")
	terms := make([]string, len(s.Clusters))
	for i, c := range s.Clusters {
		terms[i] = clip(strings.Join(c.TopTerms, ", "), 40)
		labelW = max(labelW, width(c.Label))
		termsW = max(termsW, width(terms[i]))
	}
	fmt.Fprintf(&b, "  %s  %6s  %6s  %s  %s\n", pad("label", labelW), "size", "share", pad("top terms", termsW), "example")
	for i, c := range s.Clusters {
		fmt.Fprintf(&b, "  %s  %6d  %5.1f%%  %s  %s\n", pad(c.Label, labelW), c.Size, 100*c.Share, pad(terms[i], termsW), clip(oneLine(c.Example), 60))
	}
	if u := s.Unclustered; u.Size > 0 {
		ex := ""
		if len(u.Examples) > 0 {
			ex = u.Examples[0]
		}
		fmt.Fprintf(&b, "  %s  %6d  %6s  %s  %s\n", pad("unclustered", labelW), u.Size, "", pad("", termsW), clip(oneLine(ex), 60))
	}
	if len(s.Boilerplate) > 0 {
		fmt.Fprintf(&b, "boilerplate learnt from the log (down-weighted): %s\n", clip(strings.Join(s.Boilerplate, ", "), 100))
	}
	for _, wn := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pad pads s with spaces to n columns.
func pad(s string, n int) string {
	return s + strings.Repeat(" ", max(0, n-width(s)))
}

// clip shortens s to at most n columns, marking a cut with "…".
func clip(s string, n int) string {
	if width(s) <= n {
		return s
	}
	var b strings.Builder
	w := 0
	for _, r := range s {
		rw := width(string(r))
		if w+rw > n-1 {
			break
		}
		b.WriteRune(r)
		w += rw
	}
	return b.String() + "…"
}

// oneLine replaces line breaks and tabs by spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
