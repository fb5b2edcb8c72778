// Package cluster groups embedded queries into topics, picks
// representative samples of each cluster, labels the clusters by their top
// TF-IDF terms, and writes the result as a spate workload (JSONL dataset
// lines labelled by cluster) and a summary.
//
// Noise goes to an unclustered bucket first: queries with nothing to
// embed, queries that are only boilerplate (as learnt by textembed), and
// queries alike to no other. The rest are over-clustered by spherical
// k-means (cosine similarity to unit-norm centroids, k-means++ seeding),
// and the groups merged into a tree by a linkage that asks both for a high
// mean cosine between their queries and for a close neighbour across
// them for each query of the smaller; k is where merging
// starts to join groups that have little in common (the largest linkage
// gap), among partitions whose clusters reach a size floor. The chosen
// partition is refined by spherical k-means from its centroids. See Build.
//
// Stage: workload (built from a log).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package cluster
