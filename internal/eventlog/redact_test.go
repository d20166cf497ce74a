package eventlog

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactorString(t *testing.T) {
	r := NewRedactor("hunter2-secret-value", "short", "hunter2-secret-value-longer")
	tests := []struct {
		in, want string
	}{
		{"nothing to see", "nothing to see"},
		{"pw=hunter2-secret-value;", "pw=[REDACTED];"},
		{"pw=hunter2-secret-value-longer", "pw=[REDACTED]"},
		{"short stays", "short stays"}, // under MinSecretLen: not registered
		{"key sk-proj-abcdefghijklmnopqrstuvwxyz0123 ok", "key [REDACTED] ok"},
		{"ANTHROPIC_API_KEY=sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAA", "ANTHROPIC_API_KEY=[REDACTED]"},
		{"sk-short", "sk-short"},
		{"export CORRAL_TOKEN=crl_abcdefghijklmnopqrstuvwxyz234567abcdefgh", "export CORRAL_TOKEN=[REDACTED]"},
		{"token ghp_0123456789abcdefghijABCDEFGHIJklmnop", "token [REDACTED]"},
		{"github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED]"},
		{"Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc-def_ghi", "Authorization: Bearer [REDACTED]"},
		{"authorization: bearer abcdefgh1234==", "authorization: bearer [REDACTED]"},
		{"the bearer of bad news", "the bearer of bad news"},
		{"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID=[REDACTED]"},
		{"ASIAIOSFODNN7EXAMPLE", "[REDACTED]"},
		{"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"},
		{`"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"`, `"AWS_SECRET_ACCESS_KEY": "[REDACTED]"`},
		{"xoxb-1234567890-abcdefghij", "[REDACTED]"},
		{"a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----\nb", "a\n[REDACTED]\nb"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}

	r.Remove("hunter2-secret-value")
	if got := r.String("hunter2-secret-value!"); got != "hunter2-secret-value!" {
		t.Errorf("after Remove: String = %q; want it unmasked", got)
	}
}

func TestRedactorJSON(t *testing.T) {
	r := NewRedactor(`pa"ss\word<1>`)
	tests := []struct {
		name, in, want string
	}{
		{"untouched", `{"a": 1, "b": ["x", true, null]}`, `{"a": 1, "b": ["x", true, null]}`},
		{"escaped secret", `{"cmd":"echo pa\"ss\\word\u003c1\u003e"}`, `{"cmd":"echo [REDACTED]"}`},
		{"token in nested array", `{"out":[{"line":"export GH=ghp_0123456789abcdefghijABCDEFGHIJklmnop"}],"n":2}`,
			`{"out":[{"line":"export GH=[REDACTED]"}],"n":2}`},
		{"key", `{"sk-abcdefghijklmnopqrstuvwxyz":1}`, `{"[REDACTED]":1}`},
		{"string value", `"Bearer abcdefghijkl"`, `"Bearer [REDACTED]"`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		got := r.JSON(json.RawMessage(tt.in))
		if string(got) != tt.want {
			t.Errorf("%s: JSON(%s) = %s; want %s", tt.name, tt.in, got, tt.want)
		}
		if tt.in != "" && !json.Valid(got) {
			t.Errorf("%s: JSON(%s) = %s, not valid JSON", tt.name, tt.in, got)
		}
	}
}

func BenchmarkRedactJSON(b *testing.B) {
	r := NewRedactor("hunter2-secret-value")
	data := json.RawMessage(`{"stream":"stdout","data":"` + strings.Repeat("compiling package foo/bar ... ok\\n", 30) + `"}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r.JSON(data)
	}
}
