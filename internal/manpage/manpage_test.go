package manpage

import "testing"

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, `plain`},
		{`a\b`, `a\eb`},
		{".start\n'quote\nmid.dle", "\\&.start\n\\&'quote\nmid.dle"},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPageDate(t *testing.T) {
	tests := []struct {
		name    string
		flag    int64
		env     string
		want    int64
		wantErr bool
	}{
		{"flag wins", 100, "200", 100, false},
		{"env", 0, "200", 200, false},
		{"bad env", 0, "soon", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PageDate(tt.flag, tt.env)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got.Unix() != tt.want {
				t.Errorf("got %d, want %d", got.Unix(), tt.want)
			}
		})
	}
}
