// Package procs manages the processes of a sandbox: spawn with or without
// a PTY, signal, resize, input, output logs addressed by byte offset, and
// lifecycle events. It does not import net/http.
package procs

import (
	"log/slog"
	"time"
)

// Options configure a Manager.
type Options struct {
	KillGrace    time.Duration
	MaxProcesses int
	Logger       *slog.Logger
}

// Manager owns every managed process.
type Manager struct{ opts Options }

// NewManager returns an empty Manager.
func NewManager(opts Options) *Manager { return &Manager{opts: opts} }

// Close stops every process.
func (m *Manager) Close() {}
