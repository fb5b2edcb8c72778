package workload

import (
	"os"
	"sync"
	"testing"

	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

// TestMain loads the shipped tokenizers beside the first tests (llama3's
// takes 2 s under -race, on one CPU; the tests that count with them wait
// for it), and waits for the loads before the binary exits.
func TestMain(m *testing.M) {
	var wg sync.WaitGroup
	for _, name := range []string{"llama3", "o200k_base", "cl100k_base"} {
		wg.Go(func() { _, _ = tokenizer.Load(name) })
	}
	code := m.Run()
	wg.Wait()
	os.Exit(code)
}
