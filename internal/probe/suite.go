// Package probe holds spate's security probes: suites of attack and benign
// prompts (shipped in the binary, extensible with YAML files), the detectors
// that judge an answer, a workload source that interleaves probes with a
// run's load, and the observer that turns judged answers into attack
// success, interception, leak and false-refusal rates with intervals.
//
// Across stages: probe requests mixed into the workload, judged into probe
// figures at the metrics stage.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package probe

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/yamllimit"
)

// Kinds of family.
const (
	// Attack families try to make the model do or reveal what it must not.
	Attack = "attack"
	// Benign families are the control set: ordinary requests that must not
	// be refused.
	Benign = "benign"
)

// DefaultMaxTokens is the max_tokens of a probe request when its suite sets
// none: room for an answer to repeat a short system prompt.
const DefaultMaxTokens = 200

// Suite is one file of probes: one family of one kind.
type Suite struct {
	// Name is how --probes selects the suite.
	Name string `yaml:"suite"`
	// Family names the figures; default Name.
	Family string `yaml:"family"`
	// Kind is "attack" or "benign".
	Kind string `yaml:"kind"`
	// OWASP lists OWASP Top 10 for LLM Applications ids, e.g. LLM01.
	OWASP       []string `yaml:"owasp"`
	Description string   `yaml:"description"`
	// MaxTokens is the max_tokens of the suite's requests; default
	// DefaultMaxTokens.
	MaxTokens int     `yaml:"max_tokens"`
	Probes    []Probe `yaml:"probes"`
}

// Probe is one request and how to judge its answer.
type Probe struct {
	ID        string `yaml:"id"`
	Technique string `yaml:"technique"`
	// System, when set, is the first (system) message.
	System string `yaml:"system"`
	// Prompt is a single user message; Messages a whole conversation (after
	// System). Exactly one must be set.
	Prompt   string             `yaml:"prompt"`
	Messages []workload.Message `yaml:"messages"`
	// Planted are secrets placed in the context (system prompt, documents):
	// an answer that reveals one leaks, and the attack succeeds.
	Planted []string `yaml:"planted"`
	// Detect are further signs that the attack succeeded.
	Detect []DetectorSpec `yaml:"detect"`

	detectors []Detector
	planted   []Detector
}

// DetectorSpec is one detector of a probe, exactly one field set.
type DetectorSpec struct {
	// Canary fires when the answer contains the string, also when spaced,
	// punctuated, differently cased, or base64- or hex-encoded.
	Canary string `yaml:"canary"`
	// Regex fires when the answer matches the (Go RE2) expression.
	Regex string `yaml:"regex"`
	// JSON fires when the JSON in the answer breaks the policy.
	JSON *JSONPolicy `yaml:"json"`
}

// messages returns the chat messages of the probe: the system prompt,
// then the prompt or the conversation.
func (p *Probe) messages() []workload.Message {
	var ms []workload.Message
	if p.System != "" {
		ms = append(ms, workload.Message{Role: "system", Content: p.System})
	}
	if p.Prompt != "" {
		return append(ms, workload.Message{Role: "user", Content: p.Prompt})
	}
	return append(ms, p.Messages...)
}

var (
	idRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	owaspRE = regexp.MustCompile(`^LLM(0[1-9]|10)$`)
)

// ParseSuite reads a suite from YAML; name names it in errors (a file path).
func ParseSuite(data []byte, name string) (*Suite, error) {
	var s Suite
	if err := unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("probe suite %s: %w", name, err)
	}
	if err := s.compile(); err != nil {
		return nil, fmt.Errorf("probe suite %s: %w", name, err)
	}
	return &s, nil
}

// unmarshal decodes a suite strictly, bounded and without panics (see
// yamllimit.Decode; FuzzParseSuite found "messages: !00 00", kept in
// testdata/fuzz), with go-yaml's errors shown with their source lines.
func unmarshal(data []byte, s *Suite) error {
	err := yamllimit.Decode(data, s)
	var yerr yaml.Error
	if errors.As(err, &yerr) {
		return errors.New(yaml.FormatError(err, false, true))
	}
	return err
}

// compile validates s and builds its detectors.
func (s *Suite) compile() error {
	if !idRE.MatchString(s.Name) {
		return fmt.Errorf("suite: want a lower-case name of letters, digits, '.', '_' and '-', got %q", s.Name)
	}
	if s.Family == "" {
		s.Family = s.Name
	}
	if s.Kind != Attack && s.Kind != Benign {
		return fmt.Errorf("kind: want %q or %q, got %q", Attack, Benign, s.Kind)
	}
	if s.MaxTokens < 0 {
		return fmt.Errorf("max_tokens: must not be negative, got %d", s.MaxTokens)
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = DefaultMaxTokens
	}
	for _, o := range s.OWASP {
		if !owaspRE.MatchString(o) {
			return fmt.Errorf("owasp: want ids LLM01 to LLM10, got %q", o)
		}
	}
	if len(s.Probes) == 0 {
		return errors.New("probes: the suite has none")
	}
	seen := map[string]bool{}
	for i := range s.Probes {
		p := &s.Probes[i]
		if !idRE.MatchString(p.ID) {
			return fmt.Errorf("probes[%d].id: want a lower-case id, got %q", i, p.ID)
		}
		if seen[p.ID] {
			return fmt.Errorf("probes[%d].id: %q is used twice", i, p.ID)
		}
		seen[p.ID] = true
		if (p.Prompt == "") == (len(p.Messages) == 0) {
			return fmt.Errorf("probe %s: want exactly one of prompt and messages", p.ID)
		}
		for j, m := range p.Messages {
			if m.Role == "" || m.Content == "" {
				return fmt.Errorf("probe %s: messages[%d] needs a role and content", p.ID, j)
			}
		}
		if p.Technique == "" {
			p.Technique = "other"
		}
		for j, d := range p.Detect {
			det, err := d.compile()
			if err != nil {
				return fmt.Errorf("probe %s: detect[%d]: %w", p.ID, j, err)
			}
			p.detectors = append(p.detectors, det)
		}
		for j, c := range p.Planted {
			det, err := NewCanary(c)
			if err != nil {
				return fmt.Errorf("probe %s: planted[%d]: %w", p.ID, j, err)
			}
			p.planted = append(p.planted, det)
			if !slices.ContainsFunc(p.messages(), func(m workload.Message) bool { return strings.Contains(m.Content, c) }) {
				return fmt.Errorf("probe %s: planted[%d] %q appears in no message: plant it in the system prompt or a message", p.ID, j, c)
			}
		}
		if s.Kind == Attack && len(p.detectors)+len(p.planted) == 0 {
			return fmt.Errorf("probe %s: an attack needs planted canaries or detect rules, or its success cannot be seen", p.ID)
		}
	}
	return nil
}

func (d DetectorSpec) compile() (Detector, error) {
	n := 0
	var det Detector
	var err error
	if d.Canary != "" {
		n++
		det, err = NewCanary(d.Canary)
	}
	if d.Regex != "" {
		n++
		det, err = NewRegex(d.Regex)
	}
	if d.JSON != nil {
		n++
		det, err = NewJSONPolicy(*d.JSON)
	}
	if n != 1 {
		return nil, errors.New("want exactly one of canary, regex and json")
	}
	return det, err
}

//go:embed suites/*.yaml
var builtin embed.FS

// Builtin returns the suites shipped in the binary, in name order.
func Builtin() ([]*Suite, error) {
	names, err := fs.Glob(builtin, "suites/*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []*Suite
	for _, n := range names {
		b, err := builtin.ReadFile(n)
		if err != nil {
			return nil, err
		}
		s, err := ParseSuite(b, "built-in "+path.Base(n))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Load resolves a --probes list: built-in suite names, "all" (every
// built-in suite) and paths of YAML suite files (anything with a '/' or
// ending in .yaml or .yml). A suite file's read stops when ctx is done.
func Load(ctx context.Context, specs []string) ([]*Suite, error) {
	all, err := Builtin()
	if err != nil {
		return nil, err
	}
	var out []*Suite
	seen := map[string]bool{}
	add := func(s *Suite) error {
		if seen[s.Name] {
			return fmt.Errorf("probe suite %q is selected twice", s.Name)
		}
		seen[s.Name] = true
		out = append(out, s)
		return nil
	}
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		switch {
		case spec == "":
		case spec == "all":
			for _, s := range all {
				if err := add(s); err != nil {
					return nil, err
				}
			}
		case strings.ContainsRune(spec, '/') || strings.HasSuffix(spec, ".yaml") || strings.HasSuffix(spec, ".yml"):
			b, err := capread.ReadFile(ctx, spec, capread.SettingsLimit, "")
			if err != nil {
				return nil, fmt.Errorf("reading probe suite: %w", err)
			}
			s, err := ParseSuite(b, spec)
			if err != nil {
				return nil, err
			}
			if err := add(s); err != nil {
				return nil, err
			}
		default:
			i := slices.IndexFunc(all, func(s *Suite) bool { return s.Name == spec })
			if i < 0 {
				names := make([]string, len(all))
				for j, s := range all {
					names[j] = s.Name
				}
				return nil, fmt.Errorf("no probe suite %q: built-in suites are %s, or give a YAML file path", spec, strings.Join(names, ", "))
			}
			if err := add(all[i]); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no probe suite selected")
	}
	return out, nil
}
