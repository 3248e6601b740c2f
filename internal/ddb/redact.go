package ddb

import (
	"net/url"
	"strings"
)

// RedactURL gives the URL s as it may be printed or written to a report:
// the password of its user information replaced by "xxxxx", as
// (*url.URL).Redacted gives it (net/http's errors strip it the same way).
// An s that does not parse as a URL loses everything between "://" and
// the last "@" of its authority instead, so that no password passes
// through a typo. Anything else is returned as it is.
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		if u.User == nil {
			return s
		}
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return s
	}
	return scheme + "://xxxxx@" + authority[at+1:] + path
}
