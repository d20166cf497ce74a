package reaper

import "testing"

func TestReaperParseStat(t *testing.T) {
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 4242 19 20\n"
	tests := []struct {
		name, in string
		want     stat
		wantErr  bool
	}{
		{"plain", "17 (sleep) Z 1" + tail, stat{state: 'Z', ppid: 1, start: 4242}, false},
		{"comm with parens and spaces", "9 (a) Z 7 (b)) S 33" + tail, stat{state: 'S', ppid: 33, start: 4242}, false},
		{"no comm", "9 sleep Z 1" + tail, stat{}, true},
		{"short", "9 (sleep) Z 1 2 3\n", stat{}, true},
		{"bad ppid", "9 (sleep) Z x" + tail, stat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseStat(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
