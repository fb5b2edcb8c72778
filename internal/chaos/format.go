package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spate-dev/spate/result"
)

// WriteSummary writes a stage's chaos figures as a few lines of text.
func WriteSummary(w io.Writer, stage string, c *result.Chaos) error {
	if c == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "── %s ── chaos\n", stage)
	for i, win := range c.Windows {
		fmt.Fprintf(&b, "window %d  %.1f–%.1f s  %s\n", i, win.StartS, win.EndS, win.Faults)
		fmt.Fprintf(&b, "  inside  %5d req  errors %5.1f %%  E2E p50 %7.1f ms  p99 %7.1f ms\n", win.Inside.Requests, 100*win.Inside.ErrorRate, win.Inside.E2EP50MS, win.Inside.E2EP99MS)
		fmt.Fprintf(&b, "  outside %5d req  errors %5.1f %%  E2E p50 %7.1f ms  p99 %7.1f ms\n", win.Outside.Requests, 100*win.Outside.ErrorRate, win.Outside.E2EP50MS, win.Outside.E2EP99MS)
		if win.FailoverMS != nil {
			fmt.Fprintf(&b, "  failover %.1f ms", *win.FailoverMS)
			if win.RecoveryMS != nil {
				fmt.Fprintf(&b, " · recovery %.0f ms", *win.RecoveryMS)
			}
			b.WriteString("\n")
		}
	}
	kinds := make([]string, 0, len(c.Injected))
	for k := range c.Injected {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	inj := make([]string, len(kinds))
	for i, k := range kinds {
		inj[i] = fmt.Sprintf("%s %d", k, c.Injected[k])
	}
	if len(inj) > 0 {
		fmt.Fprintf(&b, "injected  %s\n", strings.Join(inj, ", "))
	}
	fmt.Fprintf(&b, "users saw %d errors", c.ErrorsSeen)
	if c.ErrorAmplification != nil {
		fmt.Fprintf(&b, " (amplification %.3f of %d failing faults)", *c.ErrorAmplification, c.FaultsInjected)
	}
	b.WriteString("\n")
	if c.Retried > 0 && c.RRetry != nil {
		fmt.Fprintf(&b, "retries   %d requests retried with %d retry attempts, %d converged: R_retry %d/%d = %.3f per attempt; %d attempts in all\n",
			c.Retried, c.RetryAttempts, c.RetriedOK, c.RetriedOK, c.RetryAttempts, *c.RRetry, c.Attempts)
	}
	switch {
	case c.MSR != nil && c.FailoverMS != nil:
		fmt.Fprintf(&b, "MSR       %.3f (%s) = (1 − %.1f ms / %.0f ms) × %.3f  (T_failover: onset → first token of the first retried request that succeeded)\n", *c.MSR, c.MSRGrade, *c.FailoverMS, c.TMaxMS, *c.RRetry)
	case c.MSR != nil:
		fmt.Fprintf(&b, "MSR       %.3f (%s): %s\n", *c.MSR, c.MSRGrade, c.MSRReason)
	case c.MSRReason != "":
		fmt.Fprintf(&b, "MSR       none: %s\n", c.MSRReason)
	}
	for _, wn := range c.Warnings {
		fmt.Fprintf(&b, "  ! %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
