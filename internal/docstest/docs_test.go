// Package docstest checks that the commands shown in README.md and
// docs/*.md are commands spate has, and (with the integration build tag)
// runs them. It holds tests only.
//
// # Conventions for the documentation
//
// Commands a reader types go in fenced blocks marked sh; what they print goes
// in the plain (or text) block after them. A "$ spate ..." prompt line inside
// any other block is an error: every command must be somewhere the test finds
// it.
//
// The default suite (a few seconds) builds ./cmd/spate once and checks every
// spate command line of every sh block (spate ..., ./spate ... or
// go run ./cmd/spate ...): the subcommand exists, and every flag it uses is
// listed by that subcommand's --help. It also checks that every --flag named
// anywhere in the prose is a flag of some spate command (or one of the few
// other programs' flags listed in otherPrograms), that every relative link
// points at a file (and heading) inside the repository, no link leaving it,
// and that README.md stays within 300 lines and its Go test compiles. Flags
// the docs describe ahead of the code are listed in pendingFlags until they
// exist.
//
// With -tags integration (which .ci/run sets) TestDocCommandsRun runs every sh
// block for real, file by file in document order, each block as one bash
// script (set -e) in a temporary directory per file that holds a copy of
// examples/, with the spate just built first on PATH:
//
//   - every loopback address (127.0.0.1:PORT, localhost:PORT) in the file's
//     blocks and in the copied examples is moved to a free port, the same
//     free port for the same PORT throughout one file; the docs write the
//     simulator at 127.0.0.1:8000;
//   - "spate sim" and "spate chaos proxy" lines are servers: the test runs
//     them in the background (given without --addr/--listen they get their
//     default address), waits until they listen, and stops them when the
//     block ends;
//   - a block that uses 127.0.0.1:8000 without starting a server there gets a
//     "spate sim" the test starts on that address for the block;
//   - lines that run other programs' builds, clusters or benchmarks (go, kubectl,
//     bench/...) are not run;
//   - a result's fingerprint shown in the output block after a block (it is
//     the same on every machine) must be one its commands printed.
//
// The whole run takes several minutes (the examples send load for 5-20 s
// each, one block at a time); go test's -timeout must allow 30m. To run one
// file's blocks: DOCSTEST_FILE=docs/run.md go test -tags integration
// -run TestDocCommandsRun ./internal/docstest.
//
// An HTML comment on the line before a block's fence, invisible when the
// Markdown is rendered, says more: clauses separated by ";" in
//
//	<!-- docs-test: skip needs a Kubernetes cluster -->
//	<!-- docs-test: sim --preset small-gpu; exit 3; timeout 3m -->
//
// skip REASON (the last clause): the block is not run (its commands are
// still checked);
// needs PROGRAM: skipped when PROGRAM is not on PATH (curl, jq);
// sim ARGS: the simulator the test starts for the block takes these flags
// (a leading --addr 127.0.0.1:PORT puts it on PORT, moved like the others,
// where the docs show a real server);
// exit N: the block must end with exit status N (a threshold that fails on
// purpose); timeout D: the block's time limit (default 2m).
package docstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the directory holding go.mod, found upwards from the test's
// working directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// docFiles are README.md and docs/*.md, relative to the repository root.
func docFiles(t testing.TB, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(more)
	for _, f := range more {
		rel, _ := filepath.Rel(root, f)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// block is one fenced code block of a Markdown file.
type block struct {
	file      string   // relative to the repository root
	line      int      // 1-based line of the opening fence
	lang      string   // the info string's first word: sh, text, yaml, ...
	lines     []string // the content
	directive string   // the text of a <!-- docs-test: ... --> just above
}

func (b block) text() string { return strings.Join(b.lines, "\n") + "\n" }

// where is the file:line of the block's content line i (0-based).
func (b block) where(i int) string { return fmt.Sprintf("%s:%d", b.file, b.line+1+i) }

var (
	fenceRE     = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([^\\s`]*)")
	directiveRE = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$`)
)

// mdFile is a Markdown file split into prose lines and fenced blocks.
type mdFile struct {
	name   string
	lines  []string
	blocks []block
	inCode []bool // per line: part of a fenced block (fences included)
}

func readMarkdown(t testing.TB, root, name string) mdFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	f := mdFile{name: name, lines: strings.Split(strings.TrimRight(string(b), "\n"), "\n")}
	f.inCode = make([]bool, len(f.lines))
	for i := 0; i < len(f.lines); i++ {
		m := fenceRE.FindStringSubmatch(f.lines[i])
		if m == nil {
			continue
		}
		fence := m[1]
		blk := block{file: name, line: i + 1, lang: m[2]}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(f.lines[j]) == "" {
				continue
			}
			if d := directiveRE.FindStringSubmatch(f.lines[j]); d != nil {
				blk.directive = d[1]
			}
			break
		}
		f.inCode[i] = true
		j := i + 1
		for ; j < len(f.lines); j++ {
			f.inCode[j] = true
			if strings.HasPrefix(strings.TrimSpace(f.lines[j]), fence) {
				break
			}
			blk.lines = append(blk.lines, f.lines[j])
		}
		if j == len(f.lines) {
			t.Errorf("%s:%d: fence never closed", name, i+1)
		}
		f.blocks = append(f.blocks, blk)
		i = j
	}
	return f
}

// shellCmd is one simple command of a shell script: its words, quotes
// removed, without redirections.
type shellCmd struct {
	words []string
	line  int // 0-based line of the script where it starts
}

// parseShell splits a script into simple commands. It knows quotes,
// escapes, line continuations, comments, $(...), `...`, ${...},
// redirections and here-documents: enough for documentation, not a shell.
func parseShell(src string) []shellCmd {
	var (
		cmds     []shellCmd
		cur      shellCmd
		word     strings.Builder
		inWord   bool
		line     int
		heredocs []string
		dropWord bool // the next word is a redirection's target
	)
	rs := []rune(src)
	endWord := func() {
		if !inWord {
			return
		}
		if dropWord {
			dropWord = false
		} else {
			if len(cur.words) == 0 {
				cur.line = line
			}
			cur.words = append(cur.words, word.String())
		}
		word.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		if len(cur.words) > 0 {
			cmds = append(cmds, cur)
		}
		cur = shellCmd{}
	}
	// balanced copies rs[i:] up to the rune closing open, nesting, and
	// returns the index after it.
	balanced := func(i int, open, close rune) int {
		depth := 0
		for ; i < len(rs); i++ {
			c := rs[i]
			word.WriteRune(c)
			switch c {
			case '\n':
				line++
			case '\\':
				if i+1 < len(rs) {
					i++
					word.WriteRune(rs[i])
				}
			case '\'':
				for i++; i < len(rs) && rs[i] != '\''; i++ {
					word.WriteRune(rs[i])
				}
				if i < len(rs) {
					word.WriteRune('\'')
				}
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case c == '\n':
			endCmd()
			i++
			line++
			for _, delim := range heredocs {
				for i < len(rs) {
					end := i
					for end < len(rs) && rs[end] != '\n' {
						end++
					}
					l := strings.TrimLeft(string(rs[i:end]), "\t")
					i = end + 1
					line++
					if l == delim {
						break
					}
				}
			}
			heredocs = nil
		case c == ' ' || c == '\t':
			endWord()
			i++
		case c == '#' && !inWord:
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case c == '\\':
			if i+1 < len(rs) && rs[i+1] == '\n' {
				i += 2
				line++
				continue
			}
			if i+1 < len(rs) {
				word.WriteRune(rs[i+1])
			}
			inWord = true
			i += 2
		case c == '\'':
			inWord = true
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				if rs[i] == '\n' {
					line++
				}
				word.WriteRune(rs[i])
			}
			i++
		case c == '"':
			inWord = true
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				switch {
				case rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune("$`\"\\\n", rs[i+1]):
					i++
					if rs[i] != '\n' {
						word.WriteRune(rs[i])
					} else {
						line++
					}
				case rs[i] == '$' && i+1 < len(rs) && rs[i+1] == '(':
					word.WriteRune('$')
					i = balanced(i+1, '(', ')') - 1
				default:
					if rs[i] == '\n' {
						line++
					}
					word.WriteRune(rs[i])
				}
			}
			i++
		case c == '$' && i+1 < len(rs) && (rs[i+1] == '(' || rs[i+1] == '{'):
			inWord = true
			word.WriteRune('$')
			if rs[i+1] == '(' {
				i = balanced(i+1, '(', ')')
			} else {
				i = balanced(i+1, '{', '}')
			}
		case c == '`':
			inWord = true
			word.WriteRune(c)
			for i++; i < len(rs) && rs[i] != '`'; i++ {
				word.WriteRune(rs[i])
			}
			word.WriteRune('`')
			i++
		case c == '>' || c == '<' || (c == '&' && i+1 < len(rs) && rs[i+1] == '>'):
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset() // a file descriptor: 2>
				inWord = false
			}
			endWord()
			if c == '<' && i+1 < len(rs) && rs[i+1] == '<' {
				if i+2 < len(rs) && rs[i+2] == '<' { // here-string
					i += 3
					dropWord = true
					continue
				}
				i += 2
				if i < len(rs) && rs[i] == '-' {
					i++
				}
				for i < len(rs) && (rs[i] == ' ' || rs[i] == '\t') {
					i++
				}
				start := i
				for i < len(rs) && !strings.ContainsRune(" \t\n;&|", rs[i]) {
					i++
				}
				heredocs = append(heredocs, strings.Trim(string(rs[start:i]), `'"`))
				continue
			}
			i++
			for i < len(rs) && strings.ContainsRune(">|&", rs[i]) {
				i++
			}
			if i < len(rs) && rs[i] >= '0' && rs[i] <= '9' && (rs[i-1] == '&') {
				for i < len(rs) && rs[i] >= '0' && rs[i] <= '9' {
					i++
				}
				continue // >&2: no target word
			}
			dropWord = true
		case strings.ContainsRune(";&|()", c):
			endCmd()
			i++
		default:
			inWord = true
			word.WriteRune(c)
			i++
		}
	}
	endCmd()
	return cmds
}

var (
	assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	reserved     = map[string]bool{"do": true, "then": true, "else": true, "elif": true, "if": true,
		"while": true, "until": true, "!": true, "time": true, "{": true, "}": true, "done": true, "fi": true,
		"exec": true, "command": true}
)

// program returns a simple command's words from the program on, without the
// reserved words and variable assignments before it; nil for a for or case
// header.
func program(words []string) []string {
	for len(words) > 0 {
		switch {
		case words[0] == "for" || words[0] == "case" || words[0] == "in" || words[0] == "esac":
			return nil
		case reserved[words[0]], assignmentRE.MatchString(words[0]):
			words = words[1:]
		default:
			return words
		}
	}
	return nil
}

// spateArgs returns the arguments of a spate command line (spate ...,
// PATH/spate ..., go run ./cmd/spate ...), ok false for another program.
func spateArgs(words []string) (args []string, ok bool) {
	w := program(words)
	switch {
	case len(w) == 0:
		return nil, false
	case w[0] == "spate" || strings.HasSuffix(w[0], "/spate"):
		return w[1:], true
	case len(w) >= 3 && w[0] == "go" && w[1] == "run" && (w[2] == "./cmd/spate" || w[2] == "github.com/spate-dev/spate/cmd/spate"):
		return w[3:], true
	}
	return nil, false
}

// command is what spate --help says of one command: its subcommands and
// flags (--name and -x).
type command struct {
	path  string
	subs  map[string]*command
	flags map[string]bool
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
	cliOnce sync.Once
	cliRoot *command
	cliErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// spateBinary builds ./cmd/spate once per test process and returns its path.
func spateBinary(t testing.TB) string {
	t.Helper()
	root := repoRoot(t)
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "docstest-bin-")
		if binErr != nil {
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(binDir, "spate"), "./cmd/spate")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/spate: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "spate")
}

var (
	flagLineRE = regexp.MustCompile(`^\s+(?:-([A-Za-z0-9]), )?--([A-Za-z0-9][A-Za-z0-9_.-]*)`)
	subLineRE  = regexp.MustCompile(`^\s+([a-z0-9][a-z0-9-]*)\s`)
)

// spateCLI reads the command tree and flags from the built binary's --help.
func spateCLI(t testing.TB) *command {
	t.Helper()
	bin := spateBinary(t)
	cliOnce.Do(func() { cliRoot, cliErr = readHelp(bin, nil) })
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliRoot
}

func readHelp(bin string, path []string) (*command, error) {
	args := append(append([]string{}, path...), "--help")
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("spate %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	c := &command{path: strings.Join(append([]string{"spate"}, path...), " "), subs: map[string]*command{}, flags: map[string]bool{}}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if l != "" && !strings.HasPrefix(l, " ") {
			section = strings.TrimSuffix(l, ":")
			continue
		}
		if strings.HasSuffix(section, " flags") {
			section = "Flags" // spate run lists its flags by group: "Target flags:", ...
		}
		switch section {
		case "Available Commands", "Additional Commands":
			if m := subLineRE.FindStringSubmatch(l); m != nil && m[1] != "help" && m[1] != "completion" {
				sub, err := readHelp(bin, append(append([]string{}, path...), m[1]))
				if err != nil {
					return nil, err
				}
				c.subs[m[1]] = sub
			}
		case "Flags", "Global Flags":
			if m := flagLineRE.FindStringSubmatch(l); m != nil {
				c.flags["--"+m[2]] = true
				if m[1] != "" {
					c.flags["-"+m[1]] = true
				}
			}
		}
	}
	return c, nil
}

var flagArgRE = regexp.MustCompile(`^--?[A-Za-z]`)

// checkArgs checks one spate command line's subcommand and flags.
func checkArgs(root *command, args []string) []string {
	node := root
	i := 0
	for i < len(args) {
		sub, ok := node.subs[args[i]]
		if !ok {
			break
		}
		node = sub
		i++
	}
	var problems []string
	if len(node.subs) > 0 && i < len(args) && !strings.HasPrefix(args[i], "-") {
		names := make([]string, 0, len(node.subs))
		for n := range node.subs {
			names = append(names, n)
		}
		sort.Strings(names)
		problems = append(problems, fmt.Sprintf("%s has no subcommand %q (it has %s)", node.path, args[i], strings.Join(names, ", ")))
		return problems
	}
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !flagArgRE.MatchString(a) {
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		if !node.flags[name] && pendingFlags[name] == "" {
			problems = append(problems, fmt.Sprintf("%s has no flag %s", node.path, name))
		}
	}
	return problems
}

// otherPrograms are flags of other programs that the docs name, with the
// program: they are not spate's.
var otherPrograms = map[string]string{
	"--headless": "chromium", "--no-sandbox": "chromium", "--disable-gpu": "chromium",
	"--disable-background-networking": "chromium", "--screenshot": "chromium",
	"--window-size": "chromium", "--proxy-server": "chromium", "--host-resolver-rules": "chromium",
	"--hide-scrollbars": "chromium", "--virtual-time-budget": "chromium",
	"--for": "kubectl wait", "--tail": "kubectl logs", "--from-file": "kubectl",
	"--streams":        "bench/stream-cpu.sh",
	"--max-logprobs":   "vllm serve",
	"--enable-metrics": "sglang", "--metrics": "llama-server", "--ctx-size": "llama-server",
	"--parallel": "llama-server", "--alias": "llama-server",
}

// pendingFlags are flags the docs describe ahead of the code, each with
// the work that adds it. They pass the checks until they exist; then
// TestPendingFlagsStillPending asks for them to be taken off this list.
var pendingFlags = map[string]string{}

var promptRE = regexp.MustCompile(`^\s*\$ +(.*)$`)

// TestDocCommandsUseRealFlags checks every spate command of every sh block:
// the subcommand exists and so does every flag it uses.
func TestDocCommandsUseRealFlags(t *testing.T) {
	root := repoRoot(t)
	cli := spateCLI(t)
	n := 0
	for _, name := range docFiles(t, root) {
		f := readMarkdown(t, root, name)
		for _, b := range f.blocks {
			if b.lang != "sh" {
				for i, l := range b.lines {
					if m := promptRE.FindStringSubmatch(l); m != nil {
						if _, ok := spateArgs(strings.Fields(m[1])); ok {
							t.Errorf("%s: a command in a %q block: put it in a sh block (its output in a plain block after it), where the docs test finds it", b.where(i), b.lang)
						}
					}
				}
				continue
			}
			for _, c := range parseShell(b.text()) {
				args, ok := spateArgs(c.words)
				if !ok {
					continue
				}
				n++
				for _, p := range checkArgs(cli, args) {
					t.Errorf("%s: %s", b.where(c.line), p)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no spate command found in the docs: the extraction is broken")
	}
	t.Logf("%d spate commands checked", n)
}

var mentionRE = regexp.MustCompile("(?:^|[\\s`(\\[|,/'\"])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")

// TestDocFlagMentions checks that every --flag the docs name, in prose,
// tables or output, is a flag of some spate command (or of another program
// listed in otherPrograms).
func TestDocFlagMentions(t *testing.T) {
	root := repoRoot(t)
	cli := spateCLI(t)
	all := allFlags(cli)
	for _, name := range docFiles(t, root) {
		f := readMarkdown(t, root, name)
		skip := make([]bool, len(f.lines))
		for _, b := range f.blocks {
			switch b.lang {
			case "yaml", "json", "go", "promql", "html":
				for i := b.line - 1; i <= b.line+len(b.lines); i++ {
					skip[i] = true
				}
			}
		}
		for i, l := range f.lines {
			if skip[i] {
				continue
			}
			for _, m := range mentionRE.FindAllStringSubmatch(l, -1) {
				flag := m[1]
				if all[flag] || otherPrograms[flag] != "" || pendingFlags[flag] != "" {
					continue
				}
				t.Errorf("%s:%d: %s is not a flag of any spate command (spate ... --help)", name, i+1, flag)
			}
		}
	}
}

// allFlags is every flag of every spate command.
func allFlags(c *command) map[string]bool {
	all := map[string]bool{}
	var walk func(c *command)
	walk = func(c *command) {
		for f := range c.flags {
			all[f] = true
		}
		for _, s := range c.subs {
			walk(s)
		}
	}
	walk(c)
	return all
}

// TestPendingFlagsStillPending fails once a pending flag exists, so that the
// list only holds flags the code does not have yet.
func TestPendingFlagsStillPending(t *testing.T) {
	all := allFlags(spateCLI(t))
	for f, why := range pendingFlags {
		if all[f] {
			t.Errorf("%s (%s) exists now: remove it from pendingFlags", f, why)
		} else {
			t.Logf("%s is documented ahead of the code (%s)", f, why)
		}
	}
}

var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinksStayInRepo checks that every link of the docs points at a file
// of the repository: the README and docs/ stand alone.
func TestDocLinksStayInRepo(t *testing.T) {
	root := repoRoot(t)
	for _, name := range docFiles(t, root) {
		f := readMarkdown(t, root, name)
		for i, l := range f.lines {
			if f.inCode[i] {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.HasPrefix(target, "#") {
					continue
				}
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					t.Errorf("%s:%d: link %s leaves the repository", name, i+1, target)
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				if path == "" {
					path = filepath.Base(name)
				}
				abs := filepath.Join(root, filepath.Dir(name), filepath.FromSlash(path))
				rel, err := filepath.Rel(root, abs)
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d: link %s points outside the repository", name, i+1, target)
					continue
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s:%d: link %s: no such file in the repository", name, i+1, target)
					continue
				}
				if frag != "" && strings.HasSuffix(abs, ".md") {
					relMD := filepath.ToSlash(rel)
					if !anchors(t, root, relMD)[frag] {
						t.Errorf("%s:%d: link %s: %s has no heading with the anchor #%s", name, i+1, target, relMD, frag)
					}
				}
			}
		}
	}
}

var (
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	anchorDropRE = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// anchors are the fragment names GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats.
func anchors(t testing.TB, root, name string) map[string]bool {
	f := readMarkdown(t, root, name)
	out := map[string]bool{}
	seen := map[string]int{}
	for i, l := range f.lines {
		if f.inCode[i] {
			continue
		}
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := strings.ToLower(anchorDropRE.ReplaceAllString(m[1], ""))
		a = strings.ReplaceAll(a, " ", "-")
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestParseShell pins the shell splitting the checks rely on.
func TestParseShell(t *testing.T) {
	src := `START=$(date -u -d '+6 seconds' +%Y) # a comment --not-a-flag
spate sim --addr 127.0.0.1:8000 --ttft 80ms & # server
go run ./cmd/spate run --target http://127.0.0.1:8000/v1 \
  --threshold 'p99(ttft) < 800ms' --out "spate-results/a b.json" 2>&1 | tee log.txt
for i in 0 1 2; do spate run --shard $i/3 --out x-$i.json & done; wait
cat > f.yaml <<'END'
spate run --inside-heredoc
END
spate validate f.yaml && echo ok
`
	var got []string
	for _, c := range parseShell(src) {
		got = append(got, strconv.Itoa(c.line)+":"+strings.Join(c.words, "|"))
	}
	want := []string{
		"0:START=$(date -u -d '+6 seconds' +%Y)",
		"1:spate|sim|--addr|127.0.0.1:8000|--ttft|80ms",
		"2:go|run|./cmd/spate|run|--target|http://127.0.0.1:8000/v1|--threshold|p99(ttft) < 800ms|--out|spate-results/a b.json",
		"3:tee|log.txt",
		"4:for|i|in|0|1|2",
		"4:do|spate|run|--shard|$i/3|--out|x-$i.json",
		"4:done",
		"4:wait",
		"5:cat",
		"8:spate|validate|f.yaml",
		"8:echo|ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("parseShell:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a, ok := spateArgs(strings.Fields("do FOO=1 spate run --rate 2")); !ok || strings.Join(a, " ") != "run --rate 2" {
		t.Errorf("spateArgs = %q, %v", a, ok)
	}
}

// TestCheckArgs shows that a misspelt flag or subcommand is caught.
func TestCheckArgs(t *testing.T) {
	cli := spateCLI(t)
	for _, tc := range []struct {
		args string
		bad  bool
	}{
		{"run --target http://x --rate 5 --stream=false --ef-search 1,-1", false},
		{"report r.json -o -", false},
		{"run --dataset-column prompt", true},
		{"runn --rate 5", true},
		{"workload build log.txt -o w.jsonl --k 6", false},
		{"workload bild log.txt", true},
		{"chaos proxy --upstream http://x --listn 127.0.0.1:9000", true},
	} {
		p := checkArgs(cli, strings.Fields(tc.args))
		if (len(p) > 0) != tc.bad {
			t.Errorf("spate %s: problems %q, want bad=%v", tc.args, p, tc.bad)
		}
	}
}

// TestReadmeIsShort keeps the README a five-minute read: the reference
// lives in docs/.
func TestReadmeIsShort(t *testing.T) {
	const most = 300
	f := readMarkdown(t, repoRoot(t), "README.md")
	if n := len(f.lines); n > most {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page of docs/", n, most)
	}
}

// TestReadmeGoCompiles type-checks the README's Go test (a go block that
// starts with func Test): it is put beside the root package's tests through
// an overlay, without writing into the repository, and vetted.
func TestReadmeGoCompiles(t *testing.T) {
	root := repoRoot(t)
	f := readMarkdown(t, root, "README.md")
	var src string
	line := 0
	for _, b := range f.blocks {
		if b.lang == "go" && len(b.lines) > 0 && strings.HasPrefix(b.lines[0], "func Test") {
			src, line = b.text(), b.line
		}
	}
	if src == "" {
		t.Fatal("README.md has no go block starting with func Test")
	}
	file := "package spate_test\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"testing\"\n\t\"time\"\n\n" +
		"\t\"github.com/spate-dev/spate\"\n\t\"github.com/spate-dev/spate/experiment\"\n\t\"github.com/spate-dev/spate/sim\"\n)\n\n" +
		"// From README.md's go block at line " + strconv.Itoa(line) + ".\n" + src
	dir := t.TempDir()
	virtual := filepath.Join(root, "zz_readme_go_test.go")
	real := filepath.Join(dir, "readme_test.go")
	if err := os.WriteFile(real, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {virtual: real}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "vet", "-overlay", ov, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("README.md:%d: the Go test does not compile: %v\n%s", line, err, out)
	}
}
