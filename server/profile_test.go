package server

import (
	"testing"
)

// TestConfigProfBlockRate: prof_block_rate is parsed (it sets the block
// profile's sampling rate when prof_port serves the profiles; before, it
// was accepted with a warning and ignored).
func TestConfigProfBlockRate(t *testing.T) {
	o, err := ProcessConfigFile(optsWriteConf(t, t.TempDir(), "p.conf", "prof_port: 0\nprof_block_rate: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.ProfBlockRate != 7 {
		t.Fatalf("prof_block_rate 7 parsed as %d", o.ProfBlockRate)
	}
}
