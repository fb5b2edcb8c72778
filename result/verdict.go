package result

// Resilience is part of the result for resilience figures and capacity search (issue 8).
type Resilience struct{}

// Capacity is part of the result for resilience figures and capacity search (issue 8).
type Capacity struct{}
