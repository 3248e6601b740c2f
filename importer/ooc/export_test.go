package ooc

// The knobs the tests of package ooc_test turn, to have small inputs take
// the paths that large ones take.
var (
	NarrowLevels   = &narrowLevels
	CyclesInMemory = &cyclesInMemory
	TestOnCarriers = &testOnCarriers
	MinSortBudget  = &minSortBudget
	TestOnBuilt    = &testOnBuilt
)

// LinkRuns is how many sorted runs the last round's links' target paths
// were written to (ooclinks.Links.Runs); -1: the input has no links.
func (s *State) LinkRuns() int {
	if s.links == nil {
		return -1
	}
	return s.links.Runs()
}
