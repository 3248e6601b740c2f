package importer

import "github.com/treeport/treeport/internal/ddb"

func describeError(name string, err error) error { return ddb.DescribeError("importer", name, err) }
