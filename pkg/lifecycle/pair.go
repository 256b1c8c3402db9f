package lifecycle

// Pair is what one lifecycle step moves: Old retiring (empty once removed), New taking over.
type Pair struct {
	Old string `json:"old"`
	New string `json:"new"`
}
