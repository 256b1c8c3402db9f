package lifecycle

// Field names what a Change changes: a version's flag, the version itself or its verification record.
type Field string

const (
	// FieldVersion with From "" or To "" is a version added or removed.
	FieldVersion            Field = "version"
	FieldServed             Field = "served"
	FieldStorage            Field = "storage"
	FieldDeprecated         Field = "deprecated"
	FieldDeprecationWarning Field = "deprecationWarning"
	// FieldAnnotation is a verification record set or cleared.
	FieldAnnotation Field = "annotation"
	// FieldConversion is the conversion settings (Version ""), each side by ConversionSummary.
	FieldConversion Field = "conversion"
)

// Change is one field of one version that a plan changes.
type Change struct {
	Version string `json:"version"`
	Field   Field  `json:"field"`
	From    string `json:"from"`
	To      string `json:"to"`
}
