package main

import (
	"context"
	"errors"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
)

// errInterrupted ends a command that edits files, stopped by Ctrl-C or
// SIGTERM before its first file was renamed into place: every file is as
// it was, and the same command starts over.
var errInterrupted = attention(errors.New("interrupted: nothing was written, every file is as it was; run the command again to finish"))

// writeFiles writes the files whole or not at all; a stop asked for before
// the first is in place writes none and ends as a stop does (exit 3).
func writeFiles(ctx context.Context, files []*manifest.File) error {
	err := manifest.WriteFiles(ctx, files)
	if errors.Is(err, context.Canceled) {
		return errInterrupted
	}
	return err
}
