// Package cluster groups embedded queries with k-means++ (k given, or
// chosen by silhouette), picks representative samples of each cluster,
// labels the clusters by their top TF-IDF terms, and writes the result as a
// spate workload (JSONL dataset lines labelled by cluster) and a summary.
//
// Vectors are L2-normalised (see package textembed) and clustered by
// spherical k-means: by cosine similarity to unit-norm centroids, which
// suits sparse text vectors better than plain Euclidean k-means (whose
// diffuse centroids attract every poorly-matched query into one large
// cluster).
//
// Stage: workload (built from a log).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package cluster
