package lifecycle

import "fmt"

// Objects counts objects in words: "1 object", "2 objects".
func Objects(n int64) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}
