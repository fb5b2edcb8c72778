package main

import (
	"embed"
	"strconv"
	"strings"
)

// helpFiles hold the commands' long descriptions and examples: prose,
// edited as text (help/NAME.txt; {{0}}, {{1}}, ... stand for values
// computed from the library, such as the simulator's presets).
//
//go:embed help/*.txt
var helpFiles embed.FS

// help returns help/NAME.txt with its placeholders filled in.
func help(name string, vals ...string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // a file missing from help/ (TestHelpTexts)
	}
	s := strings.TrimSuffix(string(b), "\n")
	for i, v := range vals {
		s = strings.ReplaceAll(s, "{{"+strconv.Itoa(i)+"}}", v)
	}
	return s
}
