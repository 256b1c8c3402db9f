package results

// ProofKind says what showed that objects stored at an old version survive
// being re-stored at the storage version.
type ProofKind string

const (
	// ProofSchema: conversion None, and the storage version's schema keeps
	// every field the old one allows; nothing about objects needed.
	ProofSchema ProofKind = "schema"
	// ProofObjects: every object checked through the API server; in a
	// migration, each in the same pass as its re-store, at the
	// resourceVersion the re-store writes.
	ProofObjects ProofKind = "objects"
	// ProofUnserved: the version is not served, and no version but the
	// storage version is: what only the old version holds no client can
	// read. A migration of objects serves it again for their check; a
	// CRD with no object has none at it.
	ProofUnserved ProofKind = "unserved"
	// ProofUnreadable: the version is gone from spec.versions, so the API
	// server cannot read an object stored at it: re-storing one fails
	// rather than loses anything.
	ProofUnreadable ProofKind = "unreadable"
	// ProofWaived: not checked, because the caller accepted losses.
	ProofWaived ProofKind = "waived"
)

// Proof is what is known of the round trip old→storage→old for the objects
// that may be stored at Version: re-storing them at Storage keeps exactly
// what that round trip keeps.
type Proof struct {
	Version string    `json:"version"`
	Storage string    `json:"storage"`
	By      ProofKind `json:"by"`
	Detail  string    `json:"detail"`
	// CheckedAt are the versions at which each object was read and sent
	// back (ProofObjects): Version itself, or, where it is not served,
	// every served version but the storage version.
	CheckedAt []string `json:"checkedAt,omitempty"`
	Objects   int64    `json:"objects,omitempty"`
	Skipped   int64    `json:"skipped,omitempty"`
	// NotStored the converter refused to express at Version: not stored
	// there, so nothing of them to lose.
	NotStored int64  `json:"notStored,omitempty"`
	Losses    []Loss `json:"losses,omitempty"`
}

// Holds reports a proof that re-storing loses nothing.
func (p *Proof) Holds() bool { return len(p.Losses) == 0 }
