package importer

import (
	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/infile"
)

// OutOfCore holds an import to a memory budget: an input whose forest
// does not fit in it is read out of core, by the passes of importer/ooc
// (ooc.OutOfCore).
type OutOfCore = ooc.OutOfCore

// InMemoryNodeBytes is what a node of the forest costs in memory at the
// peak of an import in memory (ooc.InMemoryNodeBytes).
const InMemoryNodeBytes = ooc.InMemoryNodeBytes

// SpillBytes is about the most the out-of-core passes hold on disk at
// once for the input at path (ooc.SpillBytes).
func SpillBytes(path string) int64 { return ooc.SpillBytes(path) }

// Close removes the temporary files of an input read out of core; it
// does nothing for one read in memory.
func (in *Input) Close() {
	if in.ooc != nil {
		in.ooc.Close()
	}
}

// OutOfCore reports whether the input was read out of core.
func (in *Input) OutOfCore() bool { return in.ooc != nil }

// RejectedCount is the number of rejected nodes, descendants included.
func (in *Input) RejectedCount() int {
	if in.ooc != nil {
		return in.ooc.Rejected()
	}
	return in.Forest.RejectedCount()
}

// Roots is the number of trees.
func (in *Input) Roots() int {
	if in.ooc != nil {
		return in.ooc.Roots()
	}
	return in.Forest.Roots()
}

// ReadsOutOfCore reports whether ReadInput would read the input of opts
// out of core: its OutOfCore is set, does not refuse, and the input's
// forest (as ReadInput guesses its size) does not fit the budget, or the
// passes are forced. A job that must choose its own passes before the
// read (the out-of-core plan) asks it first.
func ReadsOutOfCore(opts InputOptions) bool {
	o := opts.OutOfCore
	if o == nil || o.Refuse != "" {
		return false
	}
	if o.Force {
		return true
	}
	return o.Needs(opts.Path, inputHint(opts))
}

// EstimateNodes is how many records ReadsOutOfCore guesses the input of
// opts holds (at least a record each 40 bytes when it cannot tell): what
// a job that holds its input's records another way (verify) sizes its
// budget by.
func EstimateNodes(opts InputOptions) int64 {
	if hint := inputHint(opts); hint > 0 {
		return int64(hint)
	}
	return infile.Size(opts.Path) / 40
}

// inputHint is the number of records of the input of opts that
// ReadInput sizes its forest by, 0 when not known.
func inputHint(opts InputOptions) int {
	hint := opts.SizeHint
	if hint == 0 {
		// An input that does not open is ReadInput's to report, as
		// without this question.
		if src, err := records.OpenSource(opts.Path, opts.Source); err == nil {
			if c, ok := src.(records.CountedSource); ok {
				hint = c.Records()
			}
			src.Close()
		}
	}
	if hint == 0 {
		hint = estimateRecords(opts.Path, formatOf(opts))
	}
	return hint
}
