package report

// APIVersion versions every document the plugin prints with -o json|yaml.
const APIVersion = "crdversion.kubectl.io/v1alpha1"
