package exporter

import "github.com/aws/aws-sdk-go-v2/service/dynamodb"

// SetSDKScanDecoding makes the package's Scans decode their pages with the
// SDK (on) or with decodeScanOutput (off, the default), so that a benchmark
// can tell what the faster decoding is worth. Not safe during a scan.
func SetSDKScanDecoding(on bool) {
	if on {
		scanDecoding = func(*dynamodb.Options) {}
	} else {
		scanDecoding = fastScanDecoding
	}
}
