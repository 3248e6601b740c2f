package records

import "testing"

// For readinput_test.go, which runs the importer over this package's
// test inputs.

var (
	WriteTemp     = writeTemp
	FuzzInput     = fuzzInput
	WriteExportAt = writeExportAt
	CheckInvalid  = checkInvalid
	CRLFNotes     = crlfNotes
)

const (
	CRLFCSV  = crlfCSV
	ExportID = exportID
)

// ExportCheck is an exportCheck, for readinput_test.go.
type ExportCheck struct {
	Name   string
	Tamper func(t *testing.T, dir string, files []string)
	Want   []string
}

// ExportChecks are the exportChecks whose error comes after OpenSource,
// for readinput_test.go.
func ExportChecks() []ExportCheck {
	var out []ExportCheck
	for _, c := range exportChecks() {
		if c.atOpen {
			continue // OpenSource's error; ReadInput never reads on
		}
		out = append(out, ExportCheck{Name: c.name, Tamper: c.tamper, Want: c.want})
	}
	return out
}

// PQBytes is pqBytes, for readinput_test.go.
func PQBytes[T any](t testing.TB, rows []T, perGroup int) []byte { return pqBytes(t, rows, perGroup) }
