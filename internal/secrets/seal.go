package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Why a sealed value does not open; errors.Is finds them under the
// ErrUnprocessable class.
var (
	// ErrWrongKey: the value was sealed with another key (the key was
	// changed or lost).
	ErrWrongKey = errors.New("secret sealed with another key")
	// ErrCorrupt: the value was altered, truncated or moved to another
	// tenant or name.
	ErrCorrupt = errors.New("secret ciphertext is corrupt")
)

// The sealed format, version 1:
//
//	version (1 byte) | key id (8) | nonce (12) | AES-256-GCM ciphertext and tag
//
// The additional data binds the value to its place: the header above, the
// tenant id and the secret name.
const (
	sealVersion = 1
	keyIDSize   = 8
	nonceSize   = 12
	headerSize  = 1 + keyIDSize + nonceSize
)

// sealer seals and opens values with one key. It is safe for concurrent
// use (cipher.AEAD is).
type sealer struct {
	aead  cipher.AEAD
	keyID []byte
}

func newSealer(k *Key) (*sealer, error) {
	block, err := aes.NewCipher(k.bytes[:])
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &sealer{aead: aead, keyID: k.id()}, nil
}

// additionalData is what the tag covers besides the value: the header, the
// tenant and the name, each length-prefixed so no two places collide.
func additionalData(header []byte, tenantID, name string) []byte {
	ad := make([]byte, 0, len(header)+8+len(tenantID)+len(name))
	ad = append(ad, header...)
	ad = binary.BigEndian.AppendUint32(ad, uint32(len(tenantID)))
	ad = append(ad, tenantID...)
	ad = binary.BigEndian.AppendUint32(ad, uint32(len(name)))
	return append(ad, name...)
}

// seal encrypts value for tenantID's secret name under a fresh random
// nonce.
func (s *sealer) seal(tenantID, name string, value []byte) ([]byte, error) {
	out := make([]byte, headerSize, headerSize+len(value)+s.aead.Overhead())
	out[0] = sealVersion
	copy(out[1:], s.keyID)
	if _, err := rand.Read(out[1+keyIDSize : headerSize]); err != nil {
		return nil, fmt.Errorf("secrets: nonce: %w", err)
	}
	return s.aead.Seal(out, out[1+keyIDSize:headerSize], value, additionalData(out[:headerSize], tenantID, name)), nil
}

// open decrypts what seal made for the same tenant and name. The errors
// are ErrUnprocessable with a message for people, wrapping ErrWrongKey or
// ErrCorrupt.
func (s *sealer) open(tenantID, name string, sealed []byte) ([]byte, error) {
	if len(sealed) < headerSize+s.aead.Overhead() || sealed[0] != sealVersion {
		return nil, corrupt(name)
	}
	if id := sealed[1 : 1+keyIDSize]; !bytes.Equal(id, s.keyID) {
		return nil, errdefs.Wrap(errdefs.ErrUnprocessable, ErrWrongKey, fmt.Sprintf(
			"secret %q cannot be decrypted: it was encrypted with another secrets key (key id %s; this server's key id is %s). "+
				"The key (%s, or %s in the data directory) was changed or lost: restore it, or set the secret again",
			name, hex.EncodeToString(id), hex.EncodeToString(s.keyID), KeyEnv, KeyFile))
	}
	plain, err := s.aead.Open(nil, sealed[1+keyIDSize:headerSize], sealed[headerSize:], additionalData(sealed[:headerSize], tenantID, name))
	if err != nil {
		return nil, corrupt(name)
	}
	return plain, nil
}

func corrupt(name string) error {
	return errdefs.Wrap(errdefs.ErrUnprocessable, ErrCorrupt, fmt.Sprintf(
		"secret %q cannot be decrypted: its stored ciphertext is corrupt or was altered; set the secret again", name))
}
