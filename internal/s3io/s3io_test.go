package s3io

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Location
		wantErr string
	}{
		{name: "bucket and prefix", in: "s3://my-bucket/loads/2024", want: Location{Bucket: "my-bucket", Prefix: "loads/2024"}},
		{name: "trailing slash", in: "s3://my-bucket/loads/", want: Location{Bucket: "my-bucket", Prefix: "loads"}},
		{name: "bucket only", in: "s3://my-bucket", want: Location{Bucket: "my-bucket"}},
		{name: "bucket and slash", in: "s3://my-bucket/", want: Location{Bucket: "my-bucket"}},
		{name: "not s3", in: "/tmp/out", wantErr: "not an S3 URL"},
		{name: "upper-case bucket", in: "s3://MyBucket/x", wantErr: "not a valid bucket name"},
		{name: "no bucket", in: "s3:///x", wantErr: "not a valid bucket name"},
		{name: "empty folder", in: "s3://my-bucket/a//b", wantErr: "empty folder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseURL(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseURL(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseURL(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
	loc := Location{Bucket: "b-1", Prefix: "p/q"}
	if loc.String() != "s3://b-1/p/q/" || loc.DataPrefix() != "p/q/data/" || loc.Key("manifest.json") != "p/q/manifest.json" {
		t.Errorf("%s %s %s", loc, loc.DataPrefix(), loc.Key("manifest.json"))
	}
	if root := (Location{Bucket: "b-1"}); root.DataPrefix() != "data/" || root.String() != "s3://b-1/" {
		t.Errorf("%s %s", root, root.DataPrefix())
	}
}

func TestTransferDefaults(t *testing.T) {
	if got, want := (Transfer{}).WithDefaults(), (Transfer{Files: 4, PartSize: 16 << 20, PartConcurrency: 4}); got != want {
		t.Errorf("zero value: got %+v, want %+v", got, want)
	}
	set := Transfer{Files: 2, PartSize: 5 << 20, PartConcurrency: 1}
	if got := set.WithDefaults(); got != set {
		t.Errorf("got %+v, want %+v kept", got, set)
	}
	if got := (Transfer{Files: -1, PartSize: -1, PartConcurrency: -1}).WithDefaults(); got != (Transfer{}).WithDefaults() {
		t.Errorf("negative values: got %+v, want the defaults", got)
	}
}
