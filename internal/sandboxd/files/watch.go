package files

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/fsnotify/fsnotify"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// MaxWatchDirs caps the directories one Watch observes.
	MaxWatchDirs = 10000
)

// watchQueue is how many events wait for a slow consumer before the Watch
// drops them and reports an overflow; tests lower it.
var watchQueue = 4096

// Event is one change seen by a Watch: Kind is a sandboxapi.FSEvent*
// name, Path a sandbox path, Type the file type when known.
type Event struct {
	Kind string
	sandboxapi.WatchEvent
}

// Watch reports changes under a path. Its lifetime: Root.Watch starts one
// goroutine, owned by the Watch, that turns inotify events into Events;
// Close stops it and waits for it. The Events channel is closed when the
// goroutine ends.
type Watch struct {
	r         *Root
	fw        *fsnotify.Watcher
	recursive bool
	events    chan Event
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// Owned by the goroutine once started.
	dirs    map[string]bool // resolved names of the watched directories
	dropped bool            // events were lost since the last overflow event
}

// Watch starts watching the file or directory at sandbox path p (a symlink
// is followed). With recursive, every directory below p is watched too,
// including directories created later; the entries found in a new
// directory are reported as created, so nothing made before its watch was
// in place goes unseen. Events carry sandbox paths. When the consumer
// falls behind, or the kernel queue overflows, events are dropped and an
// fs.overflow event says so.
func (r *Root) Watch(p string, recursive bool) (*Watch, error) {
	name, err := r.resolve(p, true)
	if err != nil {
		return nil, err
	}
	fi, err := r.root.Lstat(name)
	if err != nil {
		return nil, mapErr(p, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, err, "cannot start a file watch: inotify instances exhausted")
	}
	w := &Watch{
		r: r, fw: fw, recursive: recursive && fi.IsDir(),
		events: make(chan Event, watchQueue),
		stop:   make(chan struct{}), done: make(chan struct{}),
		dirs: map[string]bool{},
	}
	if err := w.add(p, name); err != nil {
		fw.Close()
		return nil, err
	}
	if w.recursive {
		if err := w.addTree(p, name, false); err != nil {
			fw.Close()
			return nil, err
		}
	}
	go w.loop()
	return w, nil
}

// Events returns the channel of events.
func (w *Watch) Events() <-chan Event { return w.events }

// Close stops the watch. It is idempotent.
func (w *Watch) Close() error {
	var err error
	w.closeOnce.Do(func() {
		close(w.stop)
		err = w.fw.Close()
		<-w.done
	})
	return err
}

// add watches resolved name (sandbox path p).
func (w *Watch) add(p, name string) error {
	if w.dirs[name] {
		return nil
	}
	if len(w.dirs) >= MaxWatchDirs {
		return errdefs.TooLargef("%s has more than %d directories to watch", quote(p), MaxWatchDirs)
	}
	err := w.fw.Add(w.r.hostPath(name))
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return errdefs.Wrap(errdefs.ErrUnavailable, err, "the system's inotify watch limit is reached")
	case err != nil:
		return mapErr(p, err)
	}
	w.dirs[name] = true
	return nil
}

// addTree watches the directories below resolved name; with report, it
// also reports every entry found as created.
func (w *Watch) addTree(p, name string, report bool) error {
	sub, err := w.r.root.OpenRoot(name)
	if err != nil {
		return skipVanished(err)
	}
	defer sub.Close()
	return walk(context.Background(), sub, name, func(e entry) error {
		// A directory is watched before it is reported, so whatever a
		// client does in it after seeing the report is seen too.
		if e.info.IsDir() {
			if err := w.add("/"+e.rel, e.rel); err != nil {
				return err
			}
		}
		if report {
			w.send(Event{sandboxapi.FSEventCreate, sandboxapi.WatchEvent{Path: "/" + e.rel, Type: fileType(e.info.Mode())}})
		}
		return nil
	})
}

func (w *Watch) loop() {
	defer close(w.done)
	defer close(w.events)
	overflow := Event{Kind: sandboxapi.FSEventOverflow}
	for {
		// While events are being dropped, offer the overflow marker as
		// soon as the consumer has room for it.
		var pending chan Event
		if w.dropped {
			pending = w.events
		}
		select {
		case <-w.stop:
			return
		case pending <- overflow:
			w.dropped = false
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.handle(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.dropped = true
			}
		}
	}
}

var watchOps = []struct {
	op   fsnotify.Op
	kind string
}{
	{fsnotify.Create, sandboxapi.FSEventCreate},
	{fsnotify.Write, sandboxapi.FSEventWrite},
	{fsnotify.Remove, sandboxapi.FSEventRemove},
	{fsnotify.Rename, sandboxapi.FSEventRename},
	{fsnotify.Chmod, sandboxapi.FSEventChmod},
}

// handle turns one inotify event into Events.
func (w *Watch) handle(ev fsnotify.Event) {
	sp, ok := w.r.sandboxPath(ev.Name)
	if !ok || strings.Contains(path.Base(sp), tempInfix) {
		return // outside, or an atomic write's temporary file: not news
	}
	name := strings.TrimPrefix(sp, "/")
	if name == "" {
		name = "."
	}
	for _, o := range watchOps {
		if !ev.Has(o.op) {
			continue
		}
		e := Event{Kind: o.kind, WatchEvent: sandboxapi.WatchEvent{Path: sp}}
		switch o.op {
		case fsnotify.Remove, fsnotify.Rename:
			if w.dirs[name] {
				e.Type = sandboxapi.FileTypeDir
				delete(w.dirs, name) // inotify drops the watch with the directory
			}
		default:
			if fi, err := w.r.root.Lstat(name); err == nil {
				e.Type = fileType(fi.Mode())
			}
		}
		if o.op != fsnotify.Create || !w.recursive || e.Type != sandboxapi.FileTypeDir {
			w.send(e)
			continue
		}
		// A new directory: watched before it is reported (see addTree),
		// then what was made in it before the watch is reported as created.
		err := w.add(sp, name)
		w.send(e)
		if err == nil {
			err = w.addTree(sp, name, true)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.dropped = true // changes below it will be missed: tell the client to rescan
		}
	}
}

// send queues e, or drops it and remembers the loss when the consumer is
// behind. Only the loop goroutine calls it.
func (w *Watch) send(e Event) {
	if w.dropped {
		return // the overflow marker goes first; loop offers it
	}
	select {
	case w.events <- e:
	default:
		w.dropped = true
	}
}
