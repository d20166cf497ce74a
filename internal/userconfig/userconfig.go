// Package userconfig reads and writes the CLI's credentials file: the
// control plane's URL and an API token, as JSON {"url": ..., "token": ...}.
//
// The file holds a secret, so Save writes it 0600 in a 0700 directory,
// atomically (a temporary file renamed over the old one), and refuses to
// replace a symbolic link.
package userconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Config is the content of the credentials file.
type Config struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// Path returns where the credentials file lives: $CORRAL_CONFIG, else
// $XDG_CONFIG_HOME/corral/config.json, else ~/.config/corral/config.json.
// It returns "" when none of these can be determined (no home directory).
func Path() string {
	if p := os.Getenv("CORRAL_CONFIG"); p != "" {
		return p
	}
	// The XDG spec says to ignore a relative XDG_CONFIG_HOME.
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "corral", "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "corral", "config.json")
}

// Load reads the file at path. A missing file is the zero Config.
func Load(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("userconfig: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("userconfig: %s: %w", path, err)
	}
	return c, nil
}

// Save writes c to path, creating its directory (0700) if needed. The file
// is replaced atomically and is 0600 afterwards. If path is a symbolic link
// (or anything but a regular file) Save refuses, with an ErrForbidden
// error, rather than write where the link points.
func Save(path string, c Config) error {
	if path == "" {
		return fmt.Errorf("userconfig: no path for the config file: %w", errdefs.ErrInvalid)
	}
	switch fi, err := os.Lstat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("userconfig: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("userconfig: refusing to write %s, a symbolic link: %w", path, errdefs.ErrForbidden)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("userconfig: refusing to write %s, not a regular file: %w", path, errdefs.ErrForbidden)
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("userconfig: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("userconfig: %w", err)
	}
	b = append(b, '\n')

	f, err := os.CreateTemp(dir, ".config-*.tmp") // created 0600
	if err != nil {
		return fmt.Errorf("userconfig: %w", err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("userconfig: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("userconfig: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("userconfig: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("userconfig: close %s: %w", tmp, err)
	}
	// rename replaces the directory entry itself: even a symlink put at
	// path since the Lstat above is replaced, never written through.
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("userconfig: %w", err)
	}
	renamed = true
	if d, err := os.Open(dir); err == nil { // make the rename durable; best effort
		_ = d.Sync()
		d.Close()
	}
	return nil
}
