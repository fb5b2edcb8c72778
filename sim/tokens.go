package sim

// Prompt token counting. The simulator never runs a BPE tokenizer on the hot
// path; it approximates cl100k_base in one pass over the bytes:
//
//   - a run of ASCII letters of length L (with any spaces before it) counts
//     1 + (L-1)/letterRunTokenLen tokens: common words are one token, long
//     ones several;
//   - a run of digits counts one token per 3 digits (cl100k splits numbers
//     into groups of at most three);
//   - a run of newlines counts one token;
//   - a run of other ASCII punctuation of length L counts (L+1)/2 tokens;
//   - every non-ASCII character counts one token;
//   - spaces and tabs are absorbed by the token that follows.
//
// Each word of the generated vocabulary counts exactly one token, so a
// response fed back as a prompt counts what usage reported. On English prose
// the count is within a few per cent of cl100k (TestPromptTokenApprox holds
// it to its documented bounds on sample texts of several kinds).
//
// Chat requests add OpenAI's per-message overhead: 3 tokens per message, 1
// for the role, 1 for a name, and 3 to prime the reply.

const (
	letterRunTokenLen = 12
	chatPerMessage    = 3 + 1 // message framing + role
	chatPerName       = 1
	chatReplyPriming  = 3
	imagePartTokens   = 85 // OpenAI's figure for a low-detail image
)

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// promptScanner counts prompt tokens and, when blockSize > 0, computes the
// prefix-cache keys of the prompt: key k identifies everything up to the
// point where the running token count first reached (k+1)·blockSize, so two
// prompts that agree up to there share keys 0..k.
type promptScanner struct {
	tokens    int
	blockSize int
	hash      uint64
	keys      []uint64
	// emit, when set, is given each run of text and the tokens it counts
	// (the /tokenize endpoint's ids come from it).
	emit func(run string, n int)
}

func newPromptScanner(blockSize int) promptScanner {
	return promptScanner{blockSize: blockSize, hash: fnvOffset}
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// add adds n tokens and records the block keys whose boundary was crossed.
func (p *promptScanner) add(n int) {
	p.tokens += n
	if p.blockSize <= 0 {
		return
	}
	for p.tokens >= (len(p.keys)+1)*p.blockSize {
		p.keys = append(p.keys, mix64(p.hash^uint64(len(p.keys))))
	}
}

// hashBytes folds s into the running prefix hash.
func (p *promptScanner) hashBytes(s string) {
	if p.blockSize <= 0 {
		return
	}
	h := p.hash
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	p.hash = h
}

// mark folds a separator (e.g. a message boundary) into the hash.
func (p *promptScanner) mark(b byte) {
	if p.blockSize > 0 {
		p.hash = (p.hash ^ uint64(b) ^ 0x100) * fnvPrime
	}
}

// feed scans text.
func (p *promptScanner) feed(s string) {
	i := 0
	for i < len(s) {
		c := s[i]
		j := i + 1
		n := 0
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			// absorbed by the next token
		case isLetter(c):
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			n = 1 + (j-i-1)/letterRunTokenLen
		case isDigit(c):
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			n = (j - i + 2) / 3
		case c == '\n':
			for j < len(s) && (s[j] == '\n' || s[j] == '\r') {
				j++
			}
			n = 1
		case c >= 0x80:
			for j < len(s) && s[j]&0xC0 == 0x80 {
				j++
			}
			n = 1
		default:
			for j < len(s) && s[j] < 0x80 && !isLetter(s[j]) && !isDigit(s[j]) && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && s[j] != '\r' {
				j++
			}
			n = (j - i + 1) / 2
		}
		p.hashBytes(s[i:j])
		if n > 0 {
			p.add(n)
			if p.emit != nil {
				p.emit(s[i:j], n)
			}
		}
		i = j
	}
}

// countTokens returns the approximate cl100k token count of s.
func countTokens(s string) int {
	p := newPromptScanner(0)
	p.feed(s)
	return p.tokens
}

// vocabSize is the size of the id space /tokenize answers in (Llama 2's).
const vocabSize = 32000

// tokenIDs returns the ids the simulator's count gives text: a token a
// counted run of text, each id a hash of the run and the token's place in
// it, so that the same word has the same ids wherever it stands.
func tokenIDs(s string) []int {
	ids := make([]int, 0, len(s)/4+1)
	p := newPromptScanner(0)
	p.emit = func(run string, n int) {
		h := uint64(fnvOffset)
		for i := 0; i < len(run); i++ {
			h = (h ^ uint64(run[i])) * fnvPrime
		}
		for k := 0; k < n; k++ {
			ids = append(ids, int((h+uint64(k)*fnvPrime)%vocabSize))
		}
	}
	p.feed(s)
	return ids
}
