package result

// Vector is part of the result for vector search recall and workflow steps (issue 10).
type Vector struct{}

// Workflow is part of the result for vector search recall and workflow steps (issue 10).
type Workflow struct{}
