package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// Page is one page of object addresses and, when the server knows it, how
// many objects remain after it.
type Page struct {
	Items     []metav1.PartialObjectMetadata
	Remaining *int64
}

// ListPages lists the resource's objects in every namespace, metadata only,
// a page at a time, so memory stays flat however many objects there are.
//
// A continue token that expired (410, etcd compacted past it) is not an
// error: the server's 410 carries a token that goes on from the same key at
// the current revision. Objects after that key are still listed (those that
// existed before are there, unless deleted); those before it were listed
// already. Without such a token the listing starts over: repeating work is
// safe, skipping it is not.
//
// It returns how many times a token expired.
func ListPages(ctx context.Context, client metadata.Interface, gvr schema.GroupVersionResource, pageSize int64, fn func(Page) error) (int, error) {
	ri := client.Resource(gvr)
	cont := ""
	expired := 0
	for {
		list, err := ri.List(ctx, metav1.ListOptions{Limit: pageSize, Continue: cont})
		if (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && cont != "" {
			expired++
			cont = inconsistentContinue(err)
			continue
		}
		if err != nil {
			return expired, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		if err := fn(Page{Items: list.Items, Remaining: list.RemainingItemCount}); err != nil {
			return expired, err
		}
		if cont = list.Continue; cont == "" {
			return expired, nil
		}
	}
}

func inconsistentContinue(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok {
		return status.Status().ListMeta.Continue
	}
	return ""
}
