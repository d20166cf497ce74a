package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
	"unicode"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Prefix starts every token NewToken makes, so that secret scanners and
// redaction can recognise Corral tokens.
const Prefix = "crl_"

const (
	randomBytes = 25 // 200 bits: exactly 40 base32 characters, no padding
	minSecret   = 16 // shortest CORRAL_ADMIN_TOKEN accepted
	maxSecret   = 256
)

var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewToken returns a fresh token and its hash, the value to store.
func NewToken() (secret, hash string) {
	b := make([]byte, randomBytes)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead
	secret = Prefix + tokenEncoding.EncodeToString(b)
	return secret, Hash(secret)
}

// Hash returns the lowercase hex SHA-256 of secret, the form in which
// tokens are stored and looked up. An unsalted fast hash is right here:
// tokens are random, so there is no dictionary to try.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// hashInto writes Hash(secret) into dst, without allocating for a secret
// of up to maxSecret bytes.
func hashInto(dst *[64]byte, secret string) {
	var buf [maxSecret]byte
	var b []byte
	if len(secret) <= len(buf) {
		b = buf[:copy(buf[:], secret)]
	} else {
		b = []byte(secret)
	}
	sum := sha256.Sum256(b)
	hex.Encode(dst[:], sum[:])
}

// checkChosenSecret validates a token the operator chose
// (CORRAL_ADMIN_TOKEN): long enough to resist guessing, and free of spaces
// and control characters, which an Authorization header cannot carry
// intact.
func checkChosenSecret(secret string) error {
	if len(secret) < minSecret || len(secret) > maxSecret {
		return errdefs.Invalidf("CORRAL_ADMIN_TOKEN must be %d-%d characters", minSecret, maxSecret)
	}
	if strings.ContainsFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return errdefs.Invalidf("CORRAL_ADMIN_TOKEN must not contain spaces or control characters")
	}
	return nil
}
