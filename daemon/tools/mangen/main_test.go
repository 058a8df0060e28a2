package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	when := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := generate(dir, when, "cgpu 1.2.3"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "man8", "cgpud.8"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{".TH CGPUD 8", `"cgpu 1.2.3"`, "Dec 2026", ".SH DESCRIPTION", ".SH OPTIONS", "-log-level", "-config", "/etc/cgpu/cgpud.toml"} {
		if !strings.Contains(page, want) {
			t.Errorf("cgpud.8 lacks %q", want)
		}
	}
	if strings.Contains(page, "Usage:") {
		t.Errorf("cgpud.8 repeats the usage line the synopsis gives")
	}
}
