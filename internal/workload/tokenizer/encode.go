package tokenizer

// Encode returns the token ids of text, special tokens read as text: the
// same merges as Count, each final part looked up by its rank. Prompt
// builders use it to check that texts share an exact token prefix.
func (b *BPE) Encode(text string) []int {
	if text == "" {
		return nil
	}
	s := b.pool.Get().(*scratch)
	defer b.pool.Put(s)
	s.runes = appendRunes(s.runes[:0], text)
	var ids []int
	m, _ := b.pat.FindRunesMatch(s.runes)
	for m != nil {
		s.piece = appendUTF8(s.piece[:0], s.runes[m.Index:m.Index+m.Length])
		ids = b.encodePiece(ids, s.piece, s)
		m, _ = b.pat.FindNextMatch(m)
	}
	if cap(s.runes) > 1<<16 {
		s.runes, s.piece = nil, nil
	}
	return ids
}

// encodePiece appends the ids of piece p's tokens to ids.
func (b *BPE) encodePiece(ids []int, p []byte, s *scratch) []int {
	if len(p) == 0 {
		return ids
	}
	if r, ok := b.ranks[string(p)]; ok {
		return append(ids, r)
	}
	if len(p) <= smallPiece {
		b.mergeScan(p, s)
		for i := 0; i+1 < len(s.start); i++ {
			ids = append(ids, b.ranks[string(p[s.start[i]:s.start[i+1]])])
		}
		return ids
	}
	b.mergeHeap(p, s)
	n := int32(len(p))
	for i := int32(0); i < n; {
		j := s.next[i]
		ids = append(ids, b.ranks[string(p[i:j])])
		i = j
	}
	return ids
}
