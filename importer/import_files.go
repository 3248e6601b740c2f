package importer

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/treeport/treeport/importer/bulkjob"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/layouts"
)

// FilesOptions configure WriteImportFiles.
type FilesOptions struct {
	Dir          string
	Table        string // the table name written into create-table.json and import-table.json
	ItemsPerFile int
	Emit         EmitOptions
	// Settings are the flags that shaped the items, recorded in the manifest.
	Settings map[string]any
	// Billing is the capacity create-table.json and import-table.json ask
	// for (on-demand with DynamoDB's defaults when zero).
	Billing ddbtable.Billing
	// Spread, above 0, is how many items are kept back to write the items
	// in a shuffled order where two in a row seldom share a partition key
	// value of the table or of an index (see LineSpreader): a bulk put asks
	// for it (importfiles.BulkPutSpread). 0 writes them in the input's order.
	Spread int
}

// WriteImportFiles writes the input's items for one layout as the files
// DynamoDB's import from S3 reads (SPEC §6): data/*.json.gz, then
// create-table.json, import-table.json and, last, manifest.json, whose
// presence says the directory is complete.
func WriteImportFiles(ctx context.Context, in *Input, opts FilesOptions) (*importfiles.Manifest, error) {
	// A shard's data files carry its name, so that the directories of N
	// copies can be copied into one S3 prefix without one overwriting another.
	prefix := "part"
	if n := opts.Emit.Shard.Name(); n != "" {
		prefix = n + "-part"
	}
	sink, err := importfiles.NewFileSink(importfiles.FileSinkOptions{Dir: opts.Dir, ItemsPerFile: opts.ItemsPerFile, Prefix: prefix})
	if err != nil {
		return nil, err
	}
	// Each item is encoded as it comes: the items need not be kept (with
	// Spread, a window of them, encoded).
	write := sink.WriteAttrs
	var spread *importfiles.LineSpreader
	if opts.Spread > 0 {
		spread = importfiles.NewLineSpreader(opts.Emit.Layout.Table(), opts.Spread, sink.WriteLine)
		write = spread.Add
	}
	st, err := in.EmitAttrs(ctx, opts.Emit, func(_ int64, item []layouts.Attr) error {
		return write(item)
	})
	if err == nil && spread != nil {
		err = spread.Drain()
	}
	files, cerr := sink.Close()
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	l := opts.Emit.Layout
	spec := l.Table()
	create, err := ddbtable.SchemaJSON(opts.Table, spec, opts.Billing)
	if err != nil {
		return nil, err
	}
	if err := importfiles.WriteFile(filepath.Join(opts.Dir, "create-table.json"), create); err != nil {
		return nil, err
	}
	importReq, err := bulkjob.ImportTableJSON(opts.Table, spec, opts.Billing, "REPLACE-WITH-BUCKET", "REPLACE-WITH-PREFIX/data/")
	if err != nil {
		return nil, err
	}
	if err := importfiles.WriteFile(filepath.Join(opts.Dir, "import-table.json"), importReq); err != nil {
		return nil, err
	}
	m := &importfiles.Manifest{
		Tool:     "treeport",
		Created:  time.Now().UTC().Format(time.RFC3339),
		Layout:   l.Name(),
		Table:    opts.Table,
		Input:    in.Opts.Path,
		Settings: opts.Settings,
		Shard:    opts.Emit.Shard.String(),
		Nodes:    st.Nodes,
		Items:    st.Items,
		Rejected: st.Rejected,
		Files:    files,
		Format:   "DYNAMODB_JSON",
		Comp:     "GZIP",
	}
	for _, f := range files {
		m.Bytes += f.Bytes
		m.RawBytes += f.Raw
	}
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := importfiles.WriteFile(filepath.Join(opts.Dir, "manifest.json"), append(mj, '\n')); err != nil {
		return nil, err
	}
	return m, nil
}
