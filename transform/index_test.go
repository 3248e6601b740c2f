package transform

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// The ids' hash spreads the ids the index sees most, short ones counted
// up, with a shared prefix, and of every length up to 16 bytes around the
// two ways of hashing, over the slots and over the tags: no slot of a
// table of twice as many slots as ids holds many of them, and ids of one
// slot differ in their tags.
func TestIDHashSpreads(t *testing.T) {
	var x idIndex
	x.init(0)
	// Fixed keys, so that the test says the same every time (the index's
	// own are random).
	rng := rand.New(rand.NewSource(16))
	for k := range x.keys {
		x.keys[k] = rng.Uint64() | 1
	}
	sets := map[string][]string{}
	for i := range 100000 {
		sets["N%d"] = append(sets["N%d"], "N"+strconv.Itoa(i))
		sets["%d"] = append(sets["%d"], strconv.Itoa(i))
		sets["folder/…/%06d"] = append(sets["folder/…/%06d"], "folder/…/"+fmt.Sprintf("%06d", i))
		sets["%x of 1-20 bytes"] = append(sets["%x of 1-20 bytes"], strings.Repeat("x", i%20)+strconv.FormatInt(int64(i), 36))
	}
	for name, ids := range sets {
		mask := uint64(1<<18 - 1)
		slots := map[uint64]int{}
		tags := map[uint64]map[uint32]bool{}
		worst := 0
		for _, id := range ids {
			h := x.hash(id)
			s := h & mask
			slots[s]++
			worst = max(worst, slots[s])
			if tags[s] == nil {
				tags[s] = map[uint32]bool{}
			}
			if tags[s][uint32(h>>32)] {
				t.Errorf("%s: two ids of slot %d share the tag %x", name, s, h>>32)
			}
			tags[s][uint32(h>>32)] = true
		}
		// For 100,000 ids in 262,144 slots, a uniform hash puts at most 7
		// in a slot with a probability of about 1 - 1e-4.
		if worst > 8 {
			t.Errorf("%s: a slot of %d has %d of the %d ids", name, mask+1, worst, len(ids))
		}
		if h1, h2 := x.hash("CM2"), x.hash("CM20"); h1 == h2 {
			t.Errorf("CM2 and CM20 hash alike")
		}
	}
}
