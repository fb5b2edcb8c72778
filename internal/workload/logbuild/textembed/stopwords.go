package textembed

// stopWords are common English function words that carry no topic; they
// are left out of the TF-IDF terms.
var stopWords = map[string]bool{}

func init() {
	for _, w := range []string{
		"a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "as", "at",
		"be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
		"can", "cannot", "could", "did", "do", "does", "doing", "dont", "down", "during",
		"each", "else", "ever", "every", "few", "for", "from", "further", "get", "got", "had", "has", "have", "having",
		"he", "her", "here", "hers", "herself", "hi", "him", "himself", "his", "how", "i", "if", "im", "in", "into", "is", "it", "its", "itself",
		"just", "let", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other",
		"our", "ours", "ourselves", "out", "over", "own", "please", "same", "she", "should", "so", "some", "such",
		"than", "thanks", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
		"under", "until", "up", "us", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
		"you", "your", "yours", "yourself", "yourselves",
	} {
		stopWords[w] = true
	}
}

func isStopWord(w string) bool { return stopWords[w] }
