package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Summary describes a built workload: how the log was clustered and what
// each cluster holds. It is written as JSON beside the workload.
type Summary struct {
	Log       string `json:"log"`
	Queries   int    `json:"queries"`
	Skipped   int    `json:"skipped"`
	Embedding string `json:"embedding"`
	Seed      uint64 `json:"seed"`
	K         int    `json:"k"`
	// KChosenBy is "given", "silhouette" or "distinct points".
	KChosenBy string `json:"k_chosen_by"`
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

// Summarize builds the Summary of r and the workload lines written from it.
func Summarize(r *Result, lines []Line, log, embedding, workload string, weighted bool, seed uint64) *Summary {
	s := &Summary{Log: log, Queries: r.Queries, Skipped: len(r.Skipped), Embedding: embedding, Seed: seed,
		K: r.K, KChosenBy: r.KChosenBy, SilhouetteSampled: r.SilhouetteSampled, Scores: r.Scores,
		Workload: workload, Weighted: weighted, Lines: len(lines), Warnings: r.Warnings}
	for _, sc := range r.Scores {
		if sc.K == r.K {
			s.Silhouette, s.SilhouetteCI95 = sc.Silhouette, sc.SilhouetteCI95
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
	if s.KChosenBy == "silhouette" && len(s.Scores) > 0 {
		how = fmt.Sprintf("best silhouette over k = %d..%d", s.Scores[0].K, s.Scores[len(s.Scores)-1].K)
	}
	fmt.Fprintf(&b, "%d queries, %d clusters (k %s; silhouette %.3f ± %.3f), %s\n", s.Queries, s.K, how, s.Silhouette, s.SilhouetteCI95, s.Embedding)
	labelW, termsW := len("label"), len("top terms")
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
