package render

import (
	"errors"
	"fmt"
	"net/url"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ErrorMessage says an error as kubectl says it where kubectl has words
// of its own: a server that cannot be reached is named by its host, not by
// the request and the dial that failed. (kubectl's own helper for this,
// k8s.io/kubectl/pkg/cmd/util.StandardErrorMessage, would add 16 MB and
// 135 packages to the plugin; an end-to-end test holds these words to the
// real kubectl's for the same server.) Any other error is its own text.
func ErrorMessage(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err.Error()
	}
	host := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		host = u.Host
	}
	if utilnet.IsConnectionRefused(ue.Err) {
		return fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?", host)
	}
	return fmt.Sprintf("Unable to connect to the server: %v", ue.Err)
}
