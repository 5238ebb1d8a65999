//go:build race && !nolockorder && !amd64 && !arm64

package lockorder

//go:norace
func goid() uint64 { return goidSlow() }
