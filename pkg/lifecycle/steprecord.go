package lifecycle

// StepRecord is what one step changed.
type StepRecord struct {
	// Version is the pair's new version; From and To its stages.
	Version string           `json:"version"`
	From    Stage            `json:"from"`
	To      Stage            `json:"to"`
	Changes []RecordedChange `json:"changes"`
	// AnnotationsText is, for the step that first wrote the record into a file, the file's
	// metadata.annotations before it ("" for none): the last rollback puts it back.
	AnnotationsText *string `json:"annotationsText,omitempty"`
	// Window is set while the run that took the step still owes its end (window.go): a
	// killed run leaves it for the next command to close.
	Window WindowKind `json:"window,omitempty"`
}

// RecordedChange is one change of a step, as the step saw it.
type RecordedChange struct {
	Change
	// Text is, in a file, the key's lines before the step ("" if absent), so rollback gives the file
	// back byte for byte; nil on a cluster.
	Text *string `json:"text,omitempty"`
}
