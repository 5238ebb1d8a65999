package sublist

import "strings"

// The cache's heads: how many cached subjects begin with each token
// prefix of up to headDepth tokens ("a", "a.b", "a.b.c" for a cached
// "a.b.c.d"). A wildcard insert or remove patches the cached subjects its
// pattern matches, which all begin with the pattern's literal tokens: when
// no cached subject begins with the first headDepth of them, there is
// nothing to patch and the cache is not scanned. A new stream leader
// subscribes $JS.API.CONSUMER.MSG.NEXT.<stream>.* and $JS.ACK.<stream>.>
// on its server and, through the route's interest, on every other one,
// and a server whose route to a dead peer goes removes every pattern that
// peer had: each scanned the whole 1,024-entry cache, which held only
// publish and STREAM.INFO subjects (issue 20: after a kill -9 with 10,000
// streams, 11-16% of a survivor's CPU while the dead server's streams
// elected new leaders).

// headDepth is how many leading tokens the heads count a subject under.
const headDepth = 3

// cacheHeads counts cached subjects per head (guarded by the Sublist's mu).
type cacheHeads map[string]int32

// eachHead calls f with each head of subject: its first 1..headDepth
// tokens (all of them when it has fewer).
func eachHead(subject string, f func(head string)) {
	off := 0
	for range headDepth {
		i := strings.IndexByte(subject[off:], '.')
		if i < 0 {
			f(subject)
			return
		}
		f(subject[:off+i])
		off += i + 1
	}
}

// add counts a subject that entered the cache.
func (h cacheHeads) add(subject string) {
	eachHead(subject, func(head string) { h[head]++ })
}

// drop uncounts a subject that left the cache.
func (h cacheHeads) drop(subject string) {
	eachHead(subject, func(head string) {
		if h[head]--; h[head] <= 0 {
			delete(h, head)
		}
	})
}

// mayHold reports whether a cached subject may begin with lit, a pattern's
// literal prefix (its literal tokens, each followed by the separator; ""
// when the pattern begins with a wildcard: any subject may).
func (h cacheHeads) mayHold(lit string) bool {
	lit = strings.TrimSuffix(lit, tsep)
	if lit == "" {
		return true
	}
	head := lit
	eachHead(lit, func(hd string) { head = hd }) // its deepest head
	return h[head] > 0
}
