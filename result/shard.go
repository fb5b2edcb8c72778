package result

// Shard is part of the result for sharded runs (issue 12).
type Shard struct{}
