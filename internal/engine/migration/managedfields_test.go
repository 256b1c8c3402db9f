package migration

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEntriesCleaner(t *testing.T) {
	crd := func(conversion *apiextensionsv1.CustomResourceConversion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:      "example.com",
			Conversion: conversion,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: false}, {Name: "v1", Served: true, Storage: true},
			},
		}}
	}
	none := crd(nil)
	webhook := crd(&apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter})
	unset := crd(&apiextensionsv1.CustomResourceConversion{})
	unservedStorage := crd(nil)
	unservedStorage.Spec.Versions[1].Served = false
	servedOld := crd(nil)
	servedOld.Spec.Versions = append(servedOld.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true})
	at := func(e metav1.ManagedFieldsEntry, version string, ts int64) metav1.ManagedFieldsEntry {
		e.APIVersion = "example.com/" + version
		if ts > 0 {
			tm := metav1.NewTime(time.Unix(ts, 0))
			e.Time = &tm
		}
		return e
	}
	const (
		a  = `{"f:spec":{"f:a":{}}}`
		b  = `{"f:spec":{"f:b":{}}}`
		ab = `{"f:spec":{"f:a":{},"f:b":{}}}`
	)
	for _, tc := range []struct {
		also    []string
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		entries []metav1.ManagedFieldsEntry
		want    []metav1.ManagedFieldsEntry
		changed bool
	}{{
		name:    "entries at served versions are left as they are",
		crd:     none,
		entries: []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v1", 0)},
		want:    []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v1", 0)},
	}, {
		name:    "an entry alone at an unserved version moves to the storage version",
		crd:     none,
		entries: []metav1.ManagedFieldsEntry{at(entry("tool", update, a), "v1alpha1", 10)},
		want:    []metav1.ManagedFieldsEntry{at(entry("tool", update, a), "v1", 10)},
		changed: true,
	}, {
		name:    "an apply entry joins its manager's apply entry, the later time kept",
		crd:     none,
		entries: []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v1alpha1", 20), at(entry("tool", apply, b), "v1", 10)},
		want:    []metav1.ManagedFieldsEntry{at(entry("tool", apply, ab), "v1", 20)},
		changed: true,
	}, {
		name:    "an update entry joins its manager's update entry at the storage version",
		crd:     none,
		entries: []metav1.ManagedFieldsEntry{at(entry("ctl", update, b), "v1", 30), at(entry("ctl", update, a), "v1alpha1", 10)},
		want:    []metav1.ManagedFieldsEntry{at(entry("ctl", update, ab), "v1", 30)},
		changed: true,
	}, {
		name:    "another manager's entry is not joined",
		crd:     none,
		entries: []metav1.ManagedFieldsEntry{at(entry("other", apply, b), "v1", 0), at(entry("tool", apply, a), "v1alpha1", 0)},
		want:    []metav1.ManagedFieldsEntry{at(entry("other", apply, b), "v1", 0), at(entry("tool", apply, a), "v1", 0)},
		changed: true,
	}, {
		name:    "a strategy not set converts as None: moved",
		crd:     unset,
		entries: []metav1.ManagedFieldsEntry{at(entry("tool", update, a), "v1alpha1", 0)},
		want:    []metav1.ManagedFieldsEntry{at(entry("tool", update, a), "v1", 0)},
		changed: true,
	}, {
		name:    "a status entry moves beside the main one, not into it",
		crd:     none,
		entries: []metav1.ManagedFieldsEntry{at(entry("ctl", update, a), "v1", 0), withSub(at(entry("ctl", update, b), "v1alpha1", 0), "status")},
		want:    []metav1.ManagedFieldsEntry{at(entry("ctl", update, a), "v1", 0), withSub(at(entry("ctl", update, b), "v1", 0), "status")},
		changed: true,
	}, {
		name:    "a removed version's entry is dropped: other writers went unrecorded since",
		crd:     none,
		entries: []metav1.ManagedFieldsEntry{at(entry("other", apply, b), "v1", 0), at(entry("tool", apply, a), "v0", 0)},
		want:    []metav1.ManagedFieldsEntry{at(entry("other", apply, b), "v1", 0)},
		changed: true,
	}, {
		name:    "an unserved storage version's entries stay: nothing to write",
		crd:     unservedStorage,
		entries: []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v1", 0)},
		want:    []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v1", 0)},
	}, {
		name:    "where a webhook converts, paths may differ: the entry is dropped",
		crd:     webhook,
		entries: []metav1.ManagedFieldsEntry{at(entry("other", apply, b), "v1", 0), at(entry("tool", apply, a), "v1alpha1", 0)},
		want:    []metav1.ManagedFieldsEntry{at(entry("other", apply, b), "v1", 0)},
		changed: true,
	}, {
		name:    "a served version a release removes, named: moved like an unserved one",
		crd:     servedOld,
		also:    []string{"v2"},
		entries: []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v2", 10), at(entry("tool", apply, b), "v1", 20)},
		want:    []metav1.ManagedFieldsEntry{at(entry("tool", apply, ab), "v1", 20)},
		changed: true,
	}, {
		name:    "a served version not named stays",
		crd:     servedOld,
		entries: []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v2", 10)},
		want:    []metav1.ManagedFieldsEntry{at(entry("tool", apply, a), "v2", 10)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := entriesCleaner(tc.crd, tc.also...)(tc.entries)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if g, w := canonical(t, got), canonical(t, tc.want); g != w {
				t.Errorf("managedFields\n got %s\nwant %s", g, w)
			}
		})
	}
}
