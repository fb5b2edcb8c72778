package tokenizer

import (
	"os"
	"sync"
	"testing"
)

// TestMain loads the shipped vocabularies side by side (llama3's takes
// 2 s under -race, on one CPU; the tests that use them wait for it), and
// waits for the loads before the binary exits.
func TestMain(m *testing.M) {
	var wg sync.WaitGroup
	for _, name := range []string{"llama3", "o200k_base", "cl100k_base"} {
		wg.Go(func() { _, _ = Load(name) })
	}
	code := m.Run()
	wg.Wait()
	os.Exit(code)
}
