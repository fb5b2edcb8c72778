package result

// Chaos is part of the result for fault windows and failover figures (issue 9).
type Chaos struct{}
