package httpmw

import "testing"

func TestWithoutQueryParam(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"a=1", "a=1"},
		{"access_token=x", ""},
		{"a=1&access_token=x&b=%2F", "a=1&b=%2F"},
		{"access%5Ftoken=x&a=1", "a=1"}, // an escaped key is still the key
		{"access_tokens=x", "access_tokens=x"},
		{"a=access_token", "a=access_token"},
		{"access_token=x&access_token=y", ""},
		{"a=%zz&access_token=x", "a=%zz"},
	}
	for _, tt := range tests {
		if got := WithoutQueryParam(tt.in, "access_token"); got != tt.want {
			t.Errorf("WithoutQueryParam(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
