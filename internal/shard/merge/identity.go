package merge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/spate-dev/spate/result"
)

// Experiment identifies the run a shard belongs to: the hex SHA-256 of
// everything every shard of one run shares — the load settings
// (result.Config, seed and thresholds included), the workload and
// experiment-file digests, the API and the shard count. The experiment
// file's path is left out (its digest is in): shards may run it from
// different directories. Shards whose Experiment differs were not cut from
// the same run and do not merge.
func Experiment(r *result.Result, count int) string {
	cfg := r.Config
	cfg.Experiment = ""
	id := struct {
		Config     result.Config `json:"config"`
		Workload   string        `json:"workload_sha256"`
		Experiment string        `json:"experiment_sha256"`
		API        string        `json:"api"`
		SUT        string        `json:"sut_version"`
		Count      int           `json:"count"`
	}{cfg, r.Provenance.WorkloadSHA256, r.Provenance.ExperimentSHA256, r.Provenance.API, r.Provenance.SUTVersion, count}
	b, _ := json.Marshal(id) // plain data: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
