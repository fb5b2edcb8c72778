package result

// Probes is part of the result for security probe figures (issue 11).
type Probes struct{}
