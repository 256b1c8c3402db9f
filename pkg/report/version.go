package report

// Version is what `version -o json|yaml` prints.
type Version struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}
