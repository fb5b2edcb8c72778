package sim

// blockManager accounts the KV cache in blocks of blockSize tokens, with an
// optional prefix cache: full prompt blocks, keyed by promptScanner keys,
// stay cached after their sequences release them, and are reclaimed least
// recently released first when fresh blocks run out.
//
// A sequence holds its first q.shared blocks as references to cached blocks
// and the next q.private blocks on its own.
type blockManager struct {
	blockSize int
	total     int
	rawFree   int // never-cached free blocks
	evictable int // cached blocks with no references (reclaimable)
	cache     map[uint64]*cblock
	lru       cblock // sentinel of the evictable list, oldest first
}

// cblock is a cached prompt block.
type cblock struct {
	key        uint64
	refs       int
	prev, next *cblock
}

func newBlockManager(blockSize, capacityTokens int) *blockManager {
	b := &blockManager{blockSize: blockSize, total: capacityTokens / blockSize, cache: make(map[uint64]*cblock)}
	b.rawFree = b.total
	b.lru.prev, b.lru.next = &b.lru, &b.lru
	return b
}

// free is the number of blocks that can be handed out.
func (b *blockManager) free() int { return b.rawFree + b.evictable }

// usage is the fraction of blocks in use by sequences.
func (b *blockManager) usage() float64 {
	if b.total == 0 {
		return 0
	}
	return float64(b.total-b.free()) / float64(b.total)
}

// blocksFor is the number of blocks needed for tokens tokens.
func (b *blockManager) blocksFor(tokens int) int {
	return (tokens + b.blockSize - 1) / b.blockSize
}

func (b *blockManager) unlink(c *cblock) {
	c.prev.next, c.next.prev = c.next, c.prev
	c.prev, c.next = nil, nil
}

func (b *blockManager) pushNewest(c *cblock) {
	c.prev, c.next = b.lru.prev, &b.lru
	b.lru.prev.next = c
	b.lru.prev = c
}

// take hands out n blocks, reclaiming cached ones if needed.
func (b *blockManager) take(n int) bool {
	if n > b.free() {
		return false
	}
	for n > b.rawFree {
		c := b.lru.next // oldest
		b.unlink(c)
		delete(b.cache, c.key)
		b.evictable--
		b.rawFree++
	}
	b.rawFree -= n
	return true
}

// grow makes q hold enough blocks for tokens tokens.
func (b *blockManager) grow(q *seq, tokens int) bool {
	need := b.blocksFor(tokens) - (q.shared + q.private)
	if need <= 0 {
		return true
	}
	if !b.take(need) {
		return false
	}
	q.private += need
	return true
}

// match counts the leading keys present in the cache, at most maxBlocks.
func (b *blockManager) match(keys []uint64, maxBlocks int) int {
	n := 0
	for n < len(keys) && n < maxBlocks {
		if _, ok := b.cache[keys[n]]; !ok {
			break
		}
		n++
	}
	return n
}

// acquire references the cached blocks of keys (all present).
func (b *blockManager) acquire(keys []uint64) {
	for _, k := range keys {
		c := b.cache[k]
		if c.refs == 0 {
			b.unlink(c)
			b.evictable--
		}
		c.refs++
	}
}

// releaseAll returns every block q holds and resets its holdings.
func (b *blockManager) releaseAll(q *seq) {
	for _, k := range q.keys[:q.shared] {
		c := b.cache[k]
		c.refs--
		if c.refs == 0 {
			b.pushNewest(c)
			b.evictable++
		}
	}
	b.rawFree += q.private
	q.shared, q.private = 0, 0
}

// register turns q's first private block, now fully computed, into a cached
// block (or into a reference to an identical block already cached).
func (b *blockManager) register(q *seq) {
	k := q.keys[q.shared]
	if c, ok := b.cache[k]; ok {
		if c.refs == 0 {
			b.unlink(c)
			b.evictable--
		}
		c.refs++
		b.rawFree++ // q's own copy is no longer needed
	} else {
		b.cache[k] = &cblock{key: k, refs: 1}
	}
	q.private--
	q.shared++
}
