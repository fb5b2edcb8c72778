package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spate-dev/spate/experiment"
)

// workloadSpecDigest is the digest of what x's workload is made of with
// its seed left out (result.Provenance.WorkloadSpecSHA256): the workload
// settings of the experiment and of each stage, the request-shaping
// sections (plain HTTP body, chaos requests, probes, vector), and the
// contents of the dataset and image files they name. Two runs that share
// it and differ in their workload digest differ by their seed only, so
// spate compare takes them as replicates.
func workloadSpecDigest(x *experiment.Experiment) (string, error) {
	h := sha256.New()
	files := map[string]bool{}
	var order []string
	addFile := func(p string) {
		if p != "" && !files[p] {
			files[p] = true
			order = append(order, p)
		}
	}
	spec := func(w experiment.Workload) error {
		w.Seed = nil
		b, err := json.Marshal(w)
		if err != nil {
			return err
		}
		h.Write(b)
		h.Write([]byte{'\n'})
		addFile(w.Dataset)
		for _, it := range w.Intents {
			addFile(it.Dataset)
		}
		if w.Images != nil {
			for _, f := range w.Images.Files {
				addFile(f)
			}
		}
		return nil
	}
	fmt.Fprintf(h, "workload-spec/v1 api=%s method=%s path=%s body=%q\n", x.Target.API, x.Target.Method, x.Target.Path, x.Target.Body)
	if err := spec(x.Workload); err != nil {
		return "", err
	}
	for _, st := range x.Stages {
		fmt.Fprintf(h, "stage %s\n", st.Name)
		if st.Workload != nil {
			if err := spec(x.Workload.Merge(*st.Workload)); err != nil {
				return "", err
			}
		}
	}
	for _, section := range []any{x.Chaos.Requests, x.Probes, x.Vector} {
		b, err := json.Marshal(section)
		if err != nil {
			return "", err
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	addFile(x.Vector.Dataset)
	for _, p := range order {
		if err := hashFile(h, p); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes a file's name and contents to h; a name that is not a
// file (a generated dataset such as gen:N,DIM) is hashed as a name.
func hashFile(h io.Writer, path string) error {
	fmt.Fprintf(h, "file %s\n", path)
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("hashing %s for the workload digest: %w", path, err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("hashing %s for the workload digest: %w", path, err)
	}
	return nil
}
