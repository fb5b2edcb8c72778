// Package yamllimit checks YAML from outside (an experiment, a workload, a
// workflow, a probe suite) against a nesting depth and a node count before
// a YAML library parses it.
//
// The YAML library (goccy/go-yaml) takes memory in proportion to the
// square of the nesting depth and some hundreds of bytes for each node: a
// 60 KB file of nested brackets took 1.4 GB, 2 MB of one-digit list items
// 1.2 GB, so the 16 MiB cap on a settings file (capread.SettingsLimit)
// bounds neither. Check is a single pass over the bytes that keeps no more
// than MaxDepth numbers, so a file over a limit is refused before the
// library allocates for it.
//
// Stage: experiment (the files it reads). The data flow: experiment →
// workload → schedule → engine → client → record → metrics → verdict →
// outputs (docs/design.md).
package yamllimit

import "fmt"

// Limits of a YAML file of settings: far above what a file written by hand
// holds (a few levels, a few thousand nodes), far below what makes the
// YAML library take more than some tens of MB.
const (
	// MaxDepth bounds the nesting of collections (mappings and lists,
	// block or flow) within collections.
	MaxDepth = 100
	// MaxNodes bounds the keys, values, list items and collections.
	MaxNodes = 100_000
)

// Error says which limit YAML went over, and on which line.
type Error struct {
	Line  int    // 1-based
	Limit string // "depth" or "nodes"
}

func (e *Error) Error() string {
	if e.Limit == "depth" {
		return fmt.Sprintf("line %d: the YAML nests collections more than %d deep, spate's limit for a settings file: flatten it (a settings file needs a few levels)", e.Line, MaxDepth)
	}
	return fmt.Sprintf("line %d: the YAML has more than %d keys, values and list items, spate's limit for a settings file: put bulk data in a dataset file (workload.dataset) and name it from here", e.Line, MaxNodes)
}

// Check returns an *Error when data nests collections deeper than
// MaxDepth or holds more than MaxNodes nodes, else nil.
//
// It reads YAML the way the parser does as far as the structure goes:
// flow collections ([...] and {...}) outside quotes, comments and block
// scalars (| and >); block collections by their indentation; "- " (and
// "? ") entries on one line each as a level. What it counts is an estimate
// within a small factor of the parser's (a multi-line plain scalar counts
// a node a line; a list at its key's indentation does not count a level);
// the limits leave room for that. It never fails on YAML the parser would
// refuse anyway: that is the parser's to report.
func Check(data []byte) error {
	s := scanner{blockScalar: -1}
	for line, rest := 1, data; len(rest) > 0; line++ {
		var text []byte
		if i := indexNewline(rest); i >= 0 {
			text, rest = rest[:i], rest[i+1:]
		} else {
			text, rest = rest, nil
		}
		if limit := s.line(text); limit != "" {
			return &Error{Line: line, Limit: limit}
		}
	}
	return nil
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// scanner is Check's state between lines.
type scanner struct {
	block       []int // the indentation of each open block collection
	flow        int   // open flow collections
	quote       byte  // the quote of a quoted scalar still open, or 0
	blockScalar int   // the indentation of the line that began a block scalar (-1: none)
	nodes       int
}

// line reads one line (without its newline) and returns the limit it went
// over ("depth", "nodes"), or "".
func (s *scanner) line(text []byte) string {
	indent := 0
	for indent < len(text) && text[indent] == ' ' {
		indent++
	}
	if s.quote == 0 {
		content := len(text) > indent && text[indent] != '#' && text[indent] != '\r'
		if s.blockScalar >= 0 {
			if !content || indent > s.blockScalar {
				return "" // text of the block scalar
			}
			s.blockScalar = -1
		}
		if !content {
			return ""
		}
		if s.flow == 0 {
			// A line less indented closes the block collections
			// indented more; one indented more opens one.
			for len(s.block) > 0 && s.block[len(s.block)-1] > indent {
				s.block = s.block[:len(s.block)-1]
			}
			if len(s.block) == 0 || s.block[len(s.block)-1] < indent {
				s.block = append(s.block, indent)
			}
			if len(s.block) > MaxDepth {
				return "depth"
			}
		}
	}
	entries := 0  // "- " and "? " on this line, each a level
	start := true // at the start of a node
	plain := false
	for i := indent; i < len(text); i++ {
		c := text[i]
		if s.quote != 0 {
			switch {
			case s.quote == '"' && c == '\\':
				i++
			case c == s.quote && s.quote == '\'' && i+1 < len(text) && text[i+1] == '\'':
				i++ // '' in a single-quoted scalar is one quote
			case c == s.quote:
				s.quote = 0
			}
			continue
		}
		space := func(j int) bool {
			return j >= len(text) || text[j] == ' ' || text[j] == '\t' || text[j] == '\r'
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			if !plain {
				start = true
			}
		case c == '#' && (i == indent || text[i-1] == ' ' || text[i-1] == '\t'):
			return "" // a comment
		case c == ':' && (space(i+1) || s.flow > 0):
			start, plain = true, false
		case s.flow > 0 && (c == ',' || c == ']' || c == '}'):
			if c != ',' {
				s.flow--
			}
			start, plain = true, false
		case !start:
			// Within a plain scalar or a quoted one just closed.
		case c == '[' || c == '{':
			s.flow++
			s.nodes++
			if len(s.block)+entries+s.flow > MaxDepth {
				return "depth"
			}
		case (c == '-' || c == '?') && s.flow == 0 && space(i+1):
			entries++
			if len(s.block)+entries > MaxDepth {
				return "depth"
			}
		case (c == '|' || c == '>') && s.flow == 0:
			s.blockScalar = indent
			s.nodes++
			return s.count()
		case c == '"' || c == '\'':
			s.quote = c
			s.nodes++
			start = false
		case c == '&' || c == '!':
			// An anchor or a tag: a property of the node after it.
			for i+1 < len(text) && !space(i+1) {
				i++
			}
		default: // a plain scalar or an alias
			s.nodes++
			start, plain = false, true
		}
		if s.nodes > MaxNodes {
			return "nodes"
		}
	}
	return s.count()
}

func (s *scanner) count() string {
	if s.nodes > MaxNodes {
		return "nodes"
	}
	return ""
}
