// Package units writes sizes, durations and counts for people to read.
package units

import (
	"fmt"
	"strings"
)

// SizeText is a byte count for a message, in binary units: 1.5 GiB.
func SizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// DurationText is a duration for a person: 45 s, 17 min, 2.5 h.
func DurationText(secs float64) string {
	switch {
	case secs < 1:
		return "under 1 s"
	case secs < 90:
		return fmt.Sprintf("%.0f s", secs)
	case secs < 90*60:
		return fmt.Sprintf("%.0f min", secs/60)
	case secs < 48*3600:
		return fmt.Sprintf("%.1f h", secs/3600)
	}
	return fmt.Sprintf("%.1f days", secs/86400)
}

// Thousands writes n with a comma every three digits: 1,000,000.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Count is n things for a message, with separators and the noun's plural
// but for one: "1 node", "12,345 nodes", "0 items", "2 retries". noun is
// the singular; its plural takes an s, or ies for a y after a consonant.
func Count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok && stem != "" && !strings.ContainsRune("aeiou", rune(stem[len(stem)-1])) {
		return Thousands(n) + " " + stem + "ies"
	}
	return Thousands(n) + " " + noun + "s"
}
