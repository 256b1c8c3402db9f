package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// Page is one page of object addresses and, if the server knows, how many remain after it.
type Page struct {
	Items     []metav1.PartialObjectMetadata
	Remaining *int64
}

// ObjectPage is one page of whole objects, read at the version listed.
type ObjectPage struct {
	Items     []unstructured.Unstructured
	Remaining *int64
}

// ListPages lists the resource's metadata in every namespace a page at a time, so memory
// stays flat. An expired continue token is no error: its 410 carries a token going on from
// the same key; without one the listing starts over (repeating work is safe, skipping it
// is not). It returns how many times a token expired.
func ListPages(ctx context.Context, client metadata.Interface, gvr schema.GroupVersionResource, pageSize int64, fn func(Page) error) (int, error) {
	ri := client.Resource(gvr)
	return listPages(ctx, gvr, pageSize, func(ctx context.Context, o metav1.ListOptions) (string, func() error, error) {
		list, err := ri.List(ctx, o)
		if err != nil {
			return "", nil, err
		}
		return list.Continue, func() error { return fn(Page{Items: list.Items, Remaining: list.RemainingItemCount}) }, nil
	})
}

// AddressesAt lists addresses as ListPages does, at the first of Versions. A page that fails
// where Failed says (one object a converter refuses fails it) is listed again at the next
// version: an object's address is the same at every version.
type AddressesAt struct {
	Metadata metadata.Interface
	Resource schema.GroupResource
	Versions []string
	Failed   func(error) bool
}

// List hands each page to fn. It returns how many times a token expired.
func (l AddressesAt) List(ctx context.Context, pageSize int64, fn func(Page) error) (int, error) {
	var first string
	if len(l.Versions) > 0 {
		first = l.Versions[0]
	}
	return listPages(ctx, l.Resource.WithVersion(first), pageSize, func(ctx context.Context, o metav1.ListOptions) (string, func() error, error) {
		var err error
		for _, v := range l.Versions {
			var list *metav1.PartialObjectMetadataList
			list, err = l.Metadata.Resource(l.Resource.WithVersion(v)).List(ctx, o)
			if err == nil {
				return list.Continue, func() error { return fn(Page{Items: list.Items, Remaining: list.RemainingItemCount}) }, nil
			}
			if !l.Failed(err) {
				break
			}
		}
		return "", nil, err
	})
}

// ListObjectPages lists whole objects at gvr's version as ListPages lists metadata.
func ListObjectPages(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, pageSize int64, fn func(ObjectPage) error) (int, error) {
	ri := client.Resource(gvr)
	return listPages(ctx, gvr, pageSize, func(ctx context.Context, o metav1.ListOptions) (string, func() error, error) {
		list, err := ri.List(ctx, o)
		if err != nil {
			return "", nil, err
		}
		return list.GetContinue(), func() error { return fn(ObjectPage{Items: list.Items, Remaining: list.GetRemainingItemCount()}) }, nil
	})
}

// ObjectsOrAddresses lists whole objects as ListObjectPages does; a page that fails where
// Failed says is listed again at version At, metadata only, and handed on as addresses, to
// be read one by one. At the storage version a listing converts nothing.
type ObjectsOrAddresses struct {
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	Resource schema.GroupVersionResource
	At       string
	Failed   func(error) bool
}

// List hands pages to objects, relisted ones to addresses; it returns how many tokens expired.
func (l ObjectsOrAddresses) List(ctx context.Context, pageSize int64, objects func(ObjectPage) error, addresses func(Page) error) (int, error) {
	gvr := l.Resource
	ri := l.Dynamic.Resource(gvr)
	mi := l.Metadata.Resource(schema.GroupVersionResource{Group: gvr.Group, Version: l.At, Resource: gvr.Resource})
	return listPages(ctx, gvr, pageSize, func(ctx context.Context, o metav1.ListOptions) (string, func() error, error) {
		list, err := ri.List(ctx, o)
		if err != nil && l.Failed(err) {
			page, err := mi.List(ctx, o)
			if err != nil {
				return "", nil, err
			}
			return page.Continue, func() error { return addresses(Page{Items: page.Items, Remaining: page.RemainingItemCount}) }, nil
		}
		if err != nil {
			return "", nil, err
		}
		return list.GetContinue(), func() error { return objects(ObjectPage{Items: list.Items, Remaining: list.GetRemainingItemCount()}) }, nil
	})
}

// listPages lists page after page: list gives a page's continue token and what delivers it.
func listPages(ctx context.Context, gvr schema.GroupVersionResource, pageSize int64, list func(context.Context, metav1.ListOptions) (string, func() error, error)) (int, error) {
	cont := ""
	expired := 0
	for {
		next, deliver, err := list(ctx, metav1.ListOptions{Limit: pageSize, Continue: cont})
		if (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && cont != "" {
			expired++
			cont = inconsistentContinue(err)
			continue
		}
		if err != nil {
			return expired, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		if err := deliver(); err != nil {
			return expired, err
		}
		if cont = next; cont == "" {
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
