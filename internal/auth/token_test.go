package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		secret, hash := NewToken()
		if !secretRE.MatchString(secret) {
			t.Fatalf("NewToken() = %q; want crl_ and 40 lowercase base32 characters", secret)
		}
		sum := sha256.Sum256([]byte(secret))
		if want := hex.EncodeToString(sum[:]); hash != want || Hash(secret) != want {
			t.Fatalf("NewToken() hash = %q, Hash = %q; want %q", hash, Hash(secret), want)
		}
		if seen[secret] {
			t.Fatalf("NewToken() returned %q twice", secret)
		}
		seen[secret] = true
	}
}

func TestHashInto(t *testing.T) {
	for _, n := range []int{0, 44, maxSecret, maxSecret + 1, 4096} {
		secret := strings.Repeat("s", n)
		var got [64]byte
		hashInto(&got, secret)
		if string(got[:]) != Hash(secret) {
			t.Errorf("hashInto(%d bytes) = %s; want %s", n, got[:], Hash(secret))
		}
	}
}

func TestPrincipalContext(t *testing.T) {
	if p, ok := FromContext(context.Background()); ok {
		t.Errorf("FromContext(empty) = %+v, true; want false", p)
	}
	want := Principal{TenantID: "t", TokenID: "tok_1", Admin: true}
	if p, ok := FromContext(WithPrincipal(context.Background(), want)); !ok || p != want {
		t.Errorf("FromContext(WithPrincipal(%+v)) = %+v, %v", want, p, ok)
	}
}

func TestCheckChosenSecret(t *testing.T) {
	tests := []struct {
		secret string
		ok     bool
	}{
		{"0123456789abcdef", true},
		{"crl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true},
		{"0123456789abcde", false},
		{"0123456789 abcdef", false},
		{"0123456789abcdef\n", false},
		{"0123456789abcdef\x00", false},
	}
	for _, tc := range tests {
		err := checkChosenSecret(tc.secret)
		if (err == nil) != tc.ok || (err != nil && !errorsIsInvalid(err)) {
			t.Errorf("checkChosenSecret(%q) = %v; want ok=%v", tc.secret, err, tc.ok)
		}
	}
}

func errorsIsInvalid(err error) bool { return errors.Is(err, errdefs.ErrInvalid) }
