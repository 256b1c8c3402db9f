package stages

import (
	"fmt"
	"strings"
)

// Objects counts objects in words: "1 object", "2 objects".
func Objects(n int64) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

// retiringWords says what it means that every served version is deprecated, storage included.
func retiringWords(kind string, served []string, storage string) string {
	return fmt.Sprintf("every served version (%s) is deprecated, storage version %s included: %s is retiring. "+
		"There is no version to move to: clients should move off %s (its deprecation warning says where to); "+
		"its owner will remove the CRD, and every object with it; the plugin has nothing to migrate, "+
		"and stopping serving the storage version is not a step of the plugin",
		strings.Join(served, ", "), storage, kind, kind)
}

// directionWords says why a deprecated version newer than storage is left served: the plugin moves
// a kind toward its newest version and never stops serving a newer version while an older one stays.
func directionWords(newer []string, storage string) string {
	it := "it"
	if len(newer) > 1 {
		it = "them"
	}
	return fmt.Sprintf("%s deprecated though newer than storage version %s, which is not: no version takes over from %s, "+
		"and the plugin stops serving no version while an older one stays served (kubectl reads the newest served version by default); "+
		"which way the kind goes is its owner's call: a release that undeprecates %s (then promote %s), or one that removes %s",
		isAre(newer), storage, storage, strings.Join(newer, ", "), it, it)
}
