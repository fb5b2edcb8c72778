package logbuild

import (
	"fmt"
	"strconv"
)

// SetFlags fills what the flags of spate workload build give as text: k is
// --k, a number of clusters ≥ 1 or auto (Cluster.K left as it is, 0 choosing
// it); the API key comes from getenv("OPENAI_API_KEY") when a --target is
// given without --api-key. The error is ErrUsage.
func (o *Options) SetFlags(k string, getenv func(string) string) error {
	if k != "auto" {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 {
			return usageError{fmt.Sprintf("--k %q: want a number of clusters ≥ 1 or auto", k)}
		}
		o.Cluster.K = n
	}
	if o.APIKey == "" && o.Target != "" {
		o.APIKey = getenv("OPENAI_API_KEY")
	}
	return nil
}
