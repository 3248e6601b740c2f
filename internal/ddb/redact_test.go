package ddb

import "testing"

func TestRedactURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"password", "http://user:password@host:8000/x", "http://user:xxxxx@host:8000/x"},
		{"user alone", "https://user@host", "https://user@host"},
		{"none", "http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"not a URL", "http://user:pass word%zz@host/", "http://xxxxx@host/"},
		{"@ in the password", "http://u:p@ss@host", "http://u:xxxxx@host"},
		{"no scheme", "localhost:8000", "localhost:8000"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactURL(tt.in)
			if got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
