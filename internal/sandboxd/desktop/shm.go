package desktop

import (
	"fmt"
	"image"
	"math"
	"sync"

	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"
)

// shmImage captures the screen through the MIT-SHM extension: the X server
// writes the pixels into a System V shared memory segment instead of
// sending them down the socket, which saves most of a capture's time (a
// full screen is 4 MB). Xvfb and the daemon share the sandbox's IPC
// namespace; where the segment cannot be made or attached, captures use
// GetImage instead.
//
// One segment serves one capture at a time (mu); a capture that finds it
// busy uses GetImage rather than wait.
type shmImage struct {
	mu  sync.Mutex
	seg shm.Seg
	mem []byte // our mapping of the segment
}

// attachSHM makes a segment for a whole screen of format f and attaches
// it to the X server. The segment is marked for removal at once: it goes
// away when both sides have detached, even if the daemon dies.
func (x *xconn) attachSHM() (*shmImage, error) {
	if err := shm.Init(x.c); err != nil {
		return nil, err
	}
	size := x.format.stride(x.width) * x.height
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
	if err != nil {
		return nil, fmt.Errorf("shmget: %w", err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("shmat: %w", err)
	}
	seg, err := shm.NewSegId(x.c)
	if err == nil {
		err = shm.AttachChecked(x.c, seg, uint32(id), false).Check()
	}
	if err != nil {
		unix.SysvShmDetach(mem)
		return nil, fmt.Errorf("attach the segment to the X server: %w", err)
	}
	return &shmImage{seg: seg, mem: mem}, nil
}

// detach unmaps our side of the segment; call it once the X connection is
// closed (which detaches the server's side).
func (s *shmImage) detach() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		unix.SysvShmDetach(s.mem)
		s.mem = nil
	}
}

// capture reads a rectangle through the segment. ok is false when the
// segment is busy with another capture.
func (s *shmImage) capture(x *xconn, px, py, w, h int) (img *image.RGBA, ok bool, err error) {
	if !s.mu.TryLock() {
		return nil, false, nil
	}
	defer s.mu.Unlock()
	if s.mem == nil {
		return nil, false, nil
	}
	_, err = shm.GetImage(x.c, xproto.Drawable(x.root), int16(px), int16(py), uint16(w), uint16(h),
		math.MaxUint32, xproto.ImageFormatZPixmap, s.seg, 0).Reply()
	if err != nil {
		return nil, true, fmt.Errorf("shm get image: %w", err)
	}
	img, err = x.format.toRGBA(s.mem, w, h)
	return img, true, err
}
