// Package ddbwrite is the write engine: the resumable BatchWriteItem run
// that import, apply, edit, migrate, follow and bench share.
//
// Run writes what a feed hands to a DDBWriter, numbered, from a
// Checkpoint's watermark on; WriteOps is the feed of a run of puts and
// deletes, with a barrier before the first delete. The writer paces itself
// (a shared rate limiter, a start gate), holds back the items of hot
// partition keys (hot keys) and, when they would fill its window, spools
// them beside the checkpoint (the held spool); Shard splits a run between
// copies by partition key. A job embeds WriteOptions, the options its
// command line gives every run. ErrUsage and ErrInterrupted are the
// sentinels every job shares: the CLI maps them to its exit codes.
package ddbwrite
