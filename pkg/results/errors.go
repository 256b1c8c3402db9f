package results

import "errors"

// ErrWebhookUnavailable is the error (errors.Is) of a pass or a proof the
// CRD's conversion webhook did not answer: nothing was written.
var ErrWebhookUnavailable = errors.New("the conversion webhook does not answer")
