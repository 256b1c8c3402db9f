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

// Page is one page of object addresses and, when the server knows it, how
// many objects remain after it.
type Page struct {
	Items     []metav1.PartialObjectMetadata
	Remaining *int64
}

// ObjectPage is one page of whole objects, read at the version listed.
type ObjectPage struct {
	Items     []unstructured.Unstructured
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
	return listPages(ctx, gvr, pageSize, func(ctx context.Context, o metav1.ListOptions) (string, func() error, error) {
		list, err := ri.List(ctx, o)
		if err != nil {
			return "", nil, err
		}
		return list.Continue, func() error { return fn(Page{Items: list.Items, Remaining: list.RemainingItemCount}) }, nil
	})
}

// AddressesAt lists addresses as ListPages does, at the first of Versions
// (of Resource). A page that fails where Failed says so (a converter that
// will not express one of its objects at that version fails the whole
// page) is listed again, with the same limit and continue token, at the
// next version: an object's address is the same at every version, and one
// object never fails a page.
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

// ListObjectPages lists whole objects at gvr's version as ListPages lists
// their metadata.
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

// ObjectsOrAddresses lists whole objects at Resource's version as
// ListObjectPages does. A page that fails where Failed says so (a converter
// that will not express one of its objects at that version fails the whole
// page) is listed again, with the same limit and continue token, at the
// version At, metadata only, and handed on as addresses instead: the
// objects of that page are then read one by one. At the storage version a
// listing converts nothing.
type ObjectsOrAddresses struct {
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	Resource schema.GroupVersionResource
	At       string
	Failed   func(error) bool
}

// List hands each page to objects, or, where it was listed again as
// addresses, to addresses. It returns how many times a token expired.
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

// listPages lists one page after another: list asks for a page and gives
// its continue token and what hands the page on.
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
