package vfs

import (
	"os"
	"path/filepath"
	"testing"
)

// The cost the budget adds to a write of an open file (no reopen): the
// same 128-byte WriteAt on the OS file directly and through a Pool.
func BenchmarkWriteAtDirect(b *testing.B) { benchWriteAt(b, Default) }
func BenchmarkWriteAtPooled(b *testing.B) { benchWriteAt(b, NewPool(Default, 16)) }

func benchWriteAt(b *testing.B, fs FS) {
	f, err := fs.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 128)
	b.ResetTimer()
	for i := range b.N {
		if _, err := f.WriteAt(buf, int64(i%1024)*128); err != nil {
			b.Fatal(err)
		}
	}
}
