package result

// Server is part of the result for the system under test's scraped metrics (issue 7).
type Server struct{}
