package result

// Group is the measurement of the requests that carry one label value.
type Group struct {
	Requests   Requests        `json:"requests"`
	Throughput Throughput      `json:"throughput"`
	Metrics    map[string]Dist `json:"metrics"`
	Goodput    Goodput         `json:"goodput"`
	// Checks is set when the group's requests had answer checks.
	Checks *CheckFigures `json:"checks,omitempty"`
}

// Checks are the answer checks of a scenario.
type Checks struct {
	CheckFigures
	// ByCheck counts, per check name, how often it was evaluated and passed.
	ByCheck map[string]CheckCount `json:"by_check,omitempty"`
}

// CheckFigures are the pass rate and the checked sTPS of requests with
// checks.
type CheckFigures struct {
	Checked  int     `json:"checked"`   // requests that succeeded and had checks
	Passed   int     `json:"passed"`    // of those, requests that passed every check
	PassRate float64 `json:"pass_rate"` // Passed / Checked
	// STPSChecked is checked semantic tasks per second: requests that
	// had checks, completed and passed them all, per second of the
	// measurement window (stps_checked in thresholds). The seed's sTPS,
	// which also counts requests without checks, is Throughput.STPS.
	STPSChecked float64 `json:"stps_checked"`
}

// CheckCount counts one check.
type CheckCount struct {
	Evaluated int `json:"evaluated"`
	Passed    int `json:"passed"`
}
