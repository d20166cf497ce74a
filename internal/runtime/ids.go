package runtime

import (
	"crypto/rand"
	"encoding/base32"
	"regexp"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a fresh sandbox id, "sb_" and 16 lowercase letters/digits.
func NewID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "sb_" + strings.ToLower(idEncoding.EncodeToString(b))
}

var validID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CheckID rejects ids that could not be a sandbox id; they are used in
// paths, container names and cgroup names.
func CheckID(id string) error {
	if !validID.MatchString(id) {
		return errdefs.Invalidf("sandbox id %q must be 1-63 lowercase letters, digits, '_' or '-'", id)
	}
	return nil
}
