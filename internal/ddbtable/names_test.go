package ddbtable

import (
	"strings"
	"testing"
)

func TestCheckTableName(t *testing.T) {
	for _, ok := range []string{"abc", "Parts", "my_table-2.v1", strings.Repeat("a", 255)} {
		if err := CheckTableName("--table", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "ab", "a b", "tab!", "naïve", "x/y", strings.Repeat("a", 256)} {
		err := CheckTableName("--table", bad)
		if err == nil || !strings.Contains(err.Error(), "3 to 255 characters") {
			t.Errorf("%q: %v, want the rule", bad, err)
		}
	}
}
