package ddbwrite

import (
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Shard
		wantErr bool
	}{
		{name: "empty is the whole", in: "", want: Shard{}},
		{name: "first of four", in: "0/4", want: Shard{K: 0, Of: 4}},
		{name: "last of four", in: "3/4", want: Shard{K: 3, Of: 4}},
		{name: "one of one", in: "0/1", want: Shard{K: 0, Of: 1}},
		{name: "k equal to N", in: "4/4", wantErr: true},
		{name: "negative k", in: "-1/4", wantErr: true},
		{name: "zero copies", in: "0/0", wantErr: true},
		{name: "no slash", in: "3", wantErr: true},
		{name: "not numbers", in: "a/b", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "--shard") {
					t.Fatalf("ParseShard(%q) = %v, %v; want an error naming --shard", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseShard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestShardFileName(t *testing.T) {
	s := Shard{K: 1, Of: 4}
	tests := []struct {
		name  string
		shard Shard
		in    string
		want  string
	}{
		{name: "extension", shard: s, in: "ck.json", want: "ck.shard-1-of-4.json"},
		{name: "compound extension", shard: s, in: "dead/letters.json.gz", want: "dead/letters.shard-1-of-4.json.gz"},
		{name: "no extension", shard: s, in: "/var/run/ck", want: "/var/run/ck.shard-1-of-4"},
		{name: "dot file", shard: s, in: ".ck", want: ".ck.shard-1-of-4"},
		{name: "dot in a folder name", shard: s, in: "a.d/ck", want: "a.d/ck.shard-1-of-4"},
		{name: "stdout stays", shard: s, in: "-", want: "-"},
		{name: "empty stays", shard: s, in: "", want: ""},
		{name: "the whole keeps its name", shard: Shard{}, in: "ck.json", want: "ck.json"},
		{name: "one of one keeps its name", shard: Shard{K: 0, Of: 1}, in: "ck.json", want: "ck.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.shard.FileName(tc.in); got != tc.want {
				t.Errorf("%v.FileName(%q) = %q, want %q", tc.shard, tc.in, got, tc.want)
			}
		})
	}
}
