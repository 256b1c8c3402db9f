package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/convert"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ConvertOptions holds what `kubectl crdversion convert` needs.
type ConvertOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Filenames  []string
	Recursive  bool
	To         string
	CRDFiles   []string
	Output     string
	InPlace    bool
	AcceptLoss bool

	format render.Format
	// document: with --in-place, -o json|yaml given prints the report
	// as a document instead of the table.
	document bool
	files    *manifest.Files
	crds     []*apiextensionsv1.CustomResourceDefinition
	hook     convert.Webhook
}

// NewCmdConvert builds `kubectl crdversion convert`.
func NewCmdConvert(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ConvertOptions{configFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "convert -f FILE|DIR|- --to VERSION",
		Short: "Move the custom resources in manifest files to another version of their CRD",
		Long: `Move the custom resources in manifest files (a Helm chart's rendered output,
a kustomize base, a GitOps repository) to another version of their CRD, the way
the API server converts them:

  conversion None     apiVersion is rewritten
  conversion Webhook  the objects go to the CRD's own converter (its url, or
                      its Service through the API server), and the answer is
                      checked as the API server checks it

A field the new version's schema would drop, or that the converter's round trip
(old→new→old) does not bring back, is a loss: such an object is left as it was
and named, unless --accept-loss. An object the new version would reject (its
schema, its CEL rules) is left as it was and named.

Objects left as they were are checked too, and listed with why: one already at
the version, or whose CRD lacks it, is validated as the API server would take
it (a field its schema does not declare is refused, as by kubectl apply); one
of a kind no CRD given defines, while others of its group are, is of a CRD the
release drops. Either needs attention (exit 3). Objects of other groups (a
Deployment) are only counted. With --in-place, -o json|yaml prints a
ConvertReport (notConverted lists each object left, with a reason code)
instead of the table.

A kustomization in the input
that selects converted objects by version moves with them. Other documents are
left byte for byte; with --in-place the files are edited keeping comments, key
order and layout, each written whole or not at all, only inside the tree named.

The CRDs come from the cluster, or from --crd-file without one.`,
		Example: `  # A kustomize base moved to v1, in place, with the CRDs of the cluster
  kubectl crdversion convert -f deploy/base/ -R --to v1 --in-place

  # Offline, with the release's CRD manifest
  kubectl crdversion convert -f examples/ --to v1 --crd-file crds/widgets.yaml --in-place

  # From stdin to stdout
  helm template chart | kubectl crdversion convert -f - --to v1`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "Files or directories holding the custom resources, or - for stdin")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "Process the directories of -f recursively")
	cmd.Flags().StringVar(&o.To, "to", "", "Version to convert to (v1), or group/version to convert only that group's objects")
	cmd.Flags().StringSliceVar(&o.CRDFiles, "crd-file", nil, "CRD manifests to convert by instead of the cluster's CRDs (files, directories, -)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "Output format of the converted input; with --in-place, of the report. One of: (yaml, json).")
	cmd.Flags().BoolVar(&o.InPlace, "in-place", false, "Write the converted objects into their files instead of printing them")
	cmd.Flags().BoolVar(&o.AcceptLoss, "accept-loss", false, "Convert objects that lose fields too, dropping those fields")
	completeValues(cmd, "output", "yaml", "json")
	return cmd
}

// Complete reads the files and the CRDs.
func (o *ConvertOptions) Complete(cmd *cobra.Command, _ []string) error {
	var err error
	if o.format, err = render.ParseFormat(o.Output); err != nil || (o.format != render.FormatYAML && o.format != render.FormatJSON) {
		return noPrinter(o.Output, []string{"yaml", "json"})
	}
	o.document = o.InPlace && cmd.Flags().Changed("output")
	if len(o.Filenames) == 0 || o.To == "" {
		return errors.New("convert needs -f FILE|DIR|- and --to VERSION")
	}
	ctx := cmd.Context()
	if o.files, err = manifest.ReadFiles(ctx, o.Filenames, o.Recursive, o.In); err != nil {
		return err
	}
	if len(o.CRDFiles) > 0 {
		found, err := manifest.ReadCRDs(ctx, o.CRDFiles, o.Recursive, o.In)
		if err != nil {
			return err
		}
		if len(found.CRDs) == 0 {
			return fmt.Errorf("--crd-file %v holds no CustomResourceDefinition", o.CRDFiles)
		}
		o.crds = found.CRDs
	} else {
		c, err := newClients(o.configFlags, false)
		if err != nil {
			return err
		}
		if o.crds, err = c.selectCRDs(ctx, ""); err != nil {
			return err
		}
	}
	// A Service's converter is reached through the API server: with
	// --crd-file, only when a cluster is configured (a url's needs none).
	cfg, err := restConfig(o.configFlags)
	var core *corev1client.CoreV1Client
	if err == nil {
		core, err = corev1client.NewForConfig(cfg)
	}
	switch {
	case err == nil:
		o.hook.Services = core.RESTClient()
	case len(o.CRDFiles) == 0:
		return err
	}
	return nil
}

// Validate checks the flags before anything is read or sent.
func (o *ConvertOptions) Validate() error {
	for _, f := range o.Filenames {
		if f == manifest.Stdin && o.InPlace {
			return errors.New("--in-place needs files: stdin has nowhere to be written back to")
		}
	}
	return nil
}

// Run converts, then writes the files or prints them, and reports.
func (o *ConvertOptions) Run(ctx context.Context) error {
	for _, w := range o.files.Warnings {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", w)
	}
	res, err := convert.Convert(ctx, o.files.Files, convert.Options{To: o.To, CRDs: o.crds, Webhook: o.hook, AcceptLoss: o.AcceptLoss})
	var answer *convert.AnswerError
	switch {
	case ctx.Err() != nil:
		return errInterrupted
	case errors.As(err, &answer):
		return attention(fmt.Errorf("%w; nothing was converted or written", err))
	case err != nil:
		return err
	case len(res.Objects) == 0 && len(res.NotConverted) == 0:
		return fmt.Errorf("no custom resource of a known CRD in %v (the CRDs are %s)", o.Filenames, o.crdSource())
	}
	res.Skipped = o.files.Warnings
	if !o.InPlace {
		files, err := convertedFiles(o.files.Files, o.format == render.FormatJSON)
		if err != nil {
			return err
		}
		if err := render.WriteConverted(o.Out, o.format, files); err != nil {
			return err
		}
		if err := render.WriteConvertSummary(o.ErrOut, res); err != nil {
			return err
		}
	} else {
		if err := writeChanged(ctx, o.files.Files, res); err != nil {
			return err
		}
		write := render.WriteConvert
		if o.document {
			write = func(w io.Writer, r *results.ConvertResult) error { return render.WriteConvertReport(w, o.format, r) }
		}
		if err := write(o.Out, res); err != nil {
			return err
		}
	}
	// Refused, rejected (converted or as it is), or of a kind the CRDs
	// given lack in a group they define: NEW would not take it as left.
	if res.Attention() > 0 {
		return errAttention
	}
	return nil
}

func (o *ConvertOptions) crdSource() string {
	if len(o.CRDFiles) > 0 {
		return fmt.Sprintf("those of --crd-file %v", o.CRDFiles)
	}
	return "the cluster's"
}

// writeChanged writes back every file an object was converted in, and
// every kustomization that moved with them, all of them or, failing,
// saying which are written.
func writeChanged(ctx context.Context, files []*manifest.File, res *results.ConvertResult) error {
	changed := map[string]bool{}
	for _, obj := range res.Objects {
		if obj.Outcome == results.Converted {
			changed[obj.File] = true
		}
	}
	for _, k := range res.Kustomizations {
		changed[k.File] = true
	}
	var out []*manifest.File
	for _, f := range files {
		if changed[f.Path] {
			out = append(out, f)
		}
	}
	return writeFiles(ctx, out)
}

// convertedFiles are the input files as convert left them, for the report;
// their objects are parsed only where the output prints objects.
func convertedFiles(files []*manifest.File, objects bool) ([]render.ConvertedFile, error) {
	out := make([]render.ConvertedFile, 0, len(files))
	for _, f := range files {
		if !objects {
			out = append(out, render.ConvertedFile{Text: f.Bytes()})
			continue
		}
		objs, err := f.Objects()
		if err != nil {
			return nil, err
		}
		c := render.ConvertedFile{Text: f.Bytes()}
		for _, o := range objs {
			c.Objects = append(c.Objects, o.Obj)
		}
		out = append(out, c)
	}
	return out, nil
}
